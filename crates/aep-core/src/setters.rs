//! The builder setter, written once: [`setters!`](crate::setters) expands
//! `fn name(arg: T) => field = value;` into
//! `fn name(mut self, arg: T) -> Self { self.field = value; self }`, and the builder form
//! of a `&mut self` method, `fn name(arg: T) => self.method(args);`, into
//! `fn name(mut self, arg: T) -> Self { self.method(args); self }`.
//!
//! Every options type and builder of the SDK (sinks, exporters, clients, the relay's
//! configuration, the tracing layer, the adapters) has setters of that one shape; before
//! this macro each was four lines written out by hand, and the workspace carried a hundred
//! copies of them (issue 30). The generated functions are ordinary methods: their doc
//! comments, examples and visibility are the ones written at the invocation.

/// Builder setters of the one shape `fn name(mut self, arg: T) -> Self`.
///
/// Invoked inside an `impl` block; each line names the setter, its argument and either
/// the field it sets (a path such as `batch.max_events` reaches into a nested value) and
/// the expression stored there, or `self.` and the `&mut self` method it calls (a path
/// such as `self.event.set_data(..)` reaches into a nested value): the builder form of
/// that method. Attributes and doc comments written before a line stay on the setter it
/// makes.
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
///     tags: Vec<String>,
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
///         /// Adds a tag: the builder form of [`add_tag`](Self::add_tag).
///         pub fn tag(tag: &str) => self.add_tag(tag);
///         /// Adds a tag without the setter's check, straight on the list.
///         pub fn raw_tag(tag: String) => self.tags.push(tag);
///     }
///
///     /// Adds a tag, once.
///     pub fn add_tag(&mut self, tag: &str) {
///         if !self.tags.iter().any(|t| t == tag) {
///             self.tags.push(tag.to_owned());
///         }
///     }
/// }
///
/// let o = Options::default().timeout(Duration::from_secs(2)).queue(0).name("a");
/// assert_eq!((o.timeout, o.queue, o.name.as_str()), (Some(Duration::from_secs(2)), 1, "a"));
/// let o = Options::default().tag("x").tag("x").raw_tag("x".into());
/// assert_eq!(o.tags, ["x", "x"]);
/// ```
#[macro_export]
macro_rules! setters {
    // One setter at a time, so that one block mixes both forms. The method form is tried
    // first: its line starts with the `self` token, which the field form never does.
    // Its path is of token trees so that it reaches into a tuple field (`self.0.push(..)`).
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($arg:ident: $ty:ty) => self . $($call:tt).+ ($($args:tt)*);
        $($rest:tt)*
    ) => {
        $(#[$meta])*
        $vis fn $name(mut self, $arg: $ty) -> Self {
            self.$($call).+($($args)*);
            self
        }
        $crate::setters! { $($rest)* }
    };
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident($arg:ident: $ty:ty) => $field:ident $(. $sub:ident)* = $value:expr;
        $($rest:tt)*
    ) => {
        $(#[$meta])*
        $vis fn $name(mut self, $arg: $ty) -> Self {
            self.$field $(. $sub)* = $value;
            self
        }
        $crate::setters! { $($rest)* }
    };
    () => {};
}
