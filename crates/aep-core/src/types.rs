//! Event types and their registry facts: category, vendor, scope (AEP-0001 §6, AEP-0002 §3-4).
