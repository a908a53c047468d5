//! Integration tests of core through its public API only: no file, no network.

/// Results as data and as the `--json` contract: one shape, whichever way they are written.
mod serialise;
