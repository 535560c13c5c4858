//! Resume positions and the from-budget split (AEP-0001 §7.6, AEP-0003 §5).
