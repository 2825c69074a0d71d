//! Conformance harness (being written).
