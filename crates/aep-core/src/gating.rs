//! Form-values gating (AEP-0006 §…): which `values` a capture level lets through.
