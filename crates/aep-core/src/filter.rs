//! The attr-match filter dialect (AEP-0003 §6): parse fail-closed, match.
