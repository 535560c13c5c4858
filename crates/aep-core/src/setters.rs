//! The builder setter, written once: [`setters!`](crate::setters) expands
//! `fn name(arg: T) => field = value;` into
//! `fn name(mut self, arg: T) -> Self { self.field = value; self }`.
//!
//! Every options type and builder of the SDK (sinks, exporters, clients, the relay's
//! configuration, the tracing layer, the adapters) has setters of that one shape; before
//! this macro each was four lines written out by hand, and the workspace carried a hundred
//! copies of them (issue 30). The generated functions are ordinary methods: their doc
//! comments, examples and visibility are the ones written at the invocation.

/// Builder setters of the one shape `fn name(mut self, arg: T) -> Self`.
///
/// Invoked inside an `impl` block; each line names the setter, its argument and the field
/// it sets (a path such as `batch.max_events` reaches into a nested value), and the
/// expression stored there. Attributes and doc comments written before a line stay on the
/// setter it makes.
///
/// ```
/// use std::time::Duration;
///
/// /// The options of a thing.
/// #[derive(Debug, Default)]
/// pub struct Options {
///     timeout: Option<Duration>,
///     queue: usize,
///     name: String,
/// }
///
/// impl Options {
///     aep_core::setters! {
///         /// How long one attempt may take (default: none).
///         pub fn timeout(d: Duration) => timeout = Some(d);
///         /// Most items queued (at least 1).
///         pub fn queue(n: usize) => queue = n.max(1);
///         /// The name shown in reports.
///         pub fn name(name: impl Into<String>) => name = name.into();
///     }
/// }
///
/// let o = Options::default().timeout(Duration::from_secs(2)).queue(0).name("a");
/// assert_eq!((o.timeout, o.queue, o.name.as_str()), (Some(Duration::from_secs(2)), 1, "a"));
/// ```
#[macro_export]
macro_rules! setters {
    ($(
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($arg:ident: $ty:ty) => $field:ident $(. $sub:ident)* = $value:expr;
    )*) => {$(
        $(#[$meta])*
        $vis fn $name(mut self, $arg: $ty) -> Self {
            self.$field $(. $sub)* = $value;
            self
        }
    )*};
}
