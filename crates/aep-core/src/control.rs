//! Control state machines: sender correlation and target dedupe (AEP-0004).
