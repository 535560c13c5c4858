//! Envelope construction for emitters: ULID ids, RFC 3339 times (AEP-0001 §5).
