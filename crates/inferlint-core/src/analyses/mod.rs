//! What reads more than one run, or replays one: two runs compared, a sweep, a service
//! level held to the requests, what a change would have done, a run's profile as those
//! read it, and the grid a fleet's replicas are read on.

pub mod compare;
pub mod fleet_grid;
pub mod profile;
pub mod slo;
pub mod sweep;
pub mod whatif;
