//! Payload schema facts kept as data: per-type field capture annotations (AEP-0002 §5).
