//! Every check as a pure function of the run model.
//!
//! - [`boot`]: T4, T5, T6, T7/T12 and T11, from boot facts.
//! - [`counters`]: counter deltas and restart detection shared by T1, T10 and T15.
//! - [`fleet`]: T22, the replicas of a fleet recorded on one schedule.
//! - [`ledger`]: T18 and T20, the load tool's account against the server's counters and
//!   its recording.
//! - [`snapshots`]: T1, T10 and T15, from a before and an after snapshot; [`pauses`]
//!   places the pauses of a TensorRT-LLM log inside or outside the run for T1.
//! - [`owner`]: T13, the server that answers is the one started; the caller reads who
//!   owns the socket.
//! - [`series`]: T8, T9 and T14, from a series folded into [`series::SeriesStats`] one
//!   sample at a time, so a day-long recording never has to be held in memory.

pub mod boot;
pub mod counters;
pub mod fleet;
pub mod ledger;
pub mod owner;
pub mod pauses;
pub mod series;
pub mod snapshots;
