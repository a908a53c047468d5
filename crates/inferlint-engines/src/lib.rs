//! Turns what the engines print and serve into the inferlint run model.
//!
//! Key design decision: parsing never fails silently and never guesses. Our own Prometheus
//! parser ([`prom`]) reads names with `:` that generic parsers drop; the boot-log parsers
//! ([`bootlog`]) return what they understood plus every line they recognised but could not
//! read; file readers ([`files`]) accept a series whose last line a killed recorder cut off,
//! and the load tools' JSON as Python writes it ([`pyjson`]). Every reader opens its input
//! through [`input`], the ground floor that imports no other module of the crate.
//! This crate does no network and no GPU work.

#![deny(missing_docs)]

pub mod bootlog;
pub mod detect;
pub mod files;
pub mod fleet;
pub mod input;
pub mod kv_drained;
pub mod kv_frames;
pub mod load;
pub mod load_fleet;
pub mod loadcmd;
pub mod loadtools;
pub mod output;
pub mod prom;
pub mod prometheus;
pub mod pyjson;
pub mod record;
