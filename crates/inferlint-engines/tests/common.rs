/// The recordings folder (the test kit's rule: a missing one fails, naming it).
pub use inferlint_testkit::recorded;
