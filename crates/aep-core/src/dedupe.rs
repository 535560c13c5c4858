//! Bounded (source, id) dedupe (AEP-0001 §7 rule 4).
