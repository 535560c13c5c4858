//! `aep-conformance`: runs the protocol's fixture corpus through aep-core.
fn main() {}
