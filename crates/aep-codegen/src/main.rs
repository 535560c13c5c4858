//! `aep-codegen`: generates aep-core's payload types from `fixtures/schemas`.
fn main() {}
