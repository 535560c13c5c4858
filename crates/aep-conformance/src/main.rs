//! `aep-conformance`: runs the protocol's fixture corpus through aep-core.
mod check;

fn main() {
    let _ = check::Check::new("placeholder", true, None);
}
