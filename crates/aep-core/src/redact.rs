//! The redaction pipeline and digests (AEP-0003 §9).
