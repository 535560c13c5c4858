//! What the protocol's sets of wire strings share (levels, reject reasons, delivery
//! modes, error codes, roles, rule ids, subscription filter fields): each value has one
//! spelling, its `as_str`, which `Display` writes and parsing reads back.

/// `Display` as the value's wire spelling (`as_str`).
macro_rules! display_as_str {
    ($($t:ty),+ $(,)?) => {$(
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )+};
}
pub(crate) use display_as_str;

/// `Display`, `Serialize` and `Deserialize` as the wire spelling for an open set, whose
/// values outside the vocabulary are kept as read: `as_str` writes a value and
/// `$from_wire(String)` reads one.
macro_rules! open_set_as_str {
    ($t:ty, $from_wire:path) => {
        $crate::names::display_as_str!($t);

        impl ::serde::Serialize for $t {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Ok($from_wire(<String as ::serde::Deserialize>::deserialize(
                    d,
                )?))
            }
        }
    };
}
pub(crate) use open_set_as_str;

/// The value of the closed set `all` spelled `s` on the wire.
pub(crate) fn find<T: Copy>(all: &[T], as_str: fn(T) -> &'static str, s: &str) -> Option<T> {
    all.iter().copied().find(|&v| as_str(v) == s)
}
