//! The kinds of case an adversary broke, kept as tests: each one failed before its fix.

/// Nothing the user did not ask to replace is replaced: a real run, an input, a device
/// or a FIFO, the folder a link points to.
mod outputs;
/// Refused early and rightly: inputs before any server is contacted, links in pages,
/// malformed percentages, empty folders, conflicting flags and ports.
mod refusals;
