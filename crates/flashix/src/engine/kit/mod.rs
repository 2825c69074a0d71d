//! Kits: what two or more engines share; no kit imports an engine.

pub(crate) mod inpage;
