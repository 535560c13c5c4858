//! Capture down-leveling (AEP-0001 §8.2) and form-values gating (AEP-0006).
