//! The exporters: ordinary consumers of a relay (AEP-0005 §3.5).
