//! Generated payload types, one per registered type (AEP-0002 §4).
