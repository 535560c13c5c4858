//! Envelope, payload and stream validation with stable rule ids (AEP-0001, AEP-0002).
