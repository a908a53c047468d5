//! Boot-log checks: T4, T5, T6, T7/T12 and T11.
