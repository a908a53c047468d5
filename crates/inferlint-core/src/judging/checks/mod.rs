//! Every check as a pure function of the run model, and [`registry`], where each is
//! declared once: its phase, what it needs, whether it judges mid-run, its function.
//!
//! - [`boot`]: T4, T5, T6, T7/T12 and T11, from boot facts.
//! - [`probe`]: T7, what the probe of a live server saw, with whether its process lived.
//! - [`clear_card`]: T2, the card's readings before a server starts and after its stop.
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
//! - [`prefix_cache`]: T16, the share of the prompt tokens the prefix cache served.
//! - [`shortfall`]: T17, a client that kept fewer requests in flight than asked while the
//!   server had room.
//! - [`cold_start`]: T19, compile lines inside the run, a slow first wave, no warm-up.
//! - [`contention`]: T21, other processes and held-back clocks on the server's GPUs.
//! - [`spec_decode`]: T27, speculative decoding's acceptance and what it was measured on.
//! - [`disaggregation`]: T28, a run declared disaggregated that moved no KV.
//! - [`waiting`]: why requests waited at the server, where the engine says (T8, T17).

pub mod boot;
pub mod clear_card;
pub mod client_wait;
pub mod cold_start;
pub mod contention;
pub mod counters;
pub mod disaggregation;
pub mod fleet;
pub mod flight;
pub mod gpu_fold;
pub mod judge;
pub mod kv_stream;
pub mod ledger;
pub mod owner;
pub mod pauses;
pub mod prefix_cache;
pub mod probe;
pub mod registry;
pub mod series;
pub mod server_view;
pub mod shortfall;
pub mod snapshots;
pub mod spec_decode;
pub mod steps;
pub mod waiting;
