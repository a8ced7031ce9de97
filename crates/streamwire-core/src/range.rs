//! Declared ranges of `#[config]` fields: what `#[config(range = 1..=16384)]`,
//! `#[config(finite, min = 0.0)]` declare, and the check a module value passes before a run
//! starts (the ranges, then the module's own cross-field check, `#[module(validate = f)]`).
//!
//! The derive writes [`Module::CONFIG_RANGES`](crate::Module::CONFIG_RANGES) and
//! [`Module::check_config`](crate::Module::check_config); blueprint files, `-o`, `check`,
//! `config` and `Blueprint::build` all call the latter, so an out-of-range value is refused
//! wherever it comes from, with the key, the value and the range.

use std::fmt;

/// The declared range of one `#[config]` field, as people read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRange {
    /// The field.
    pub field: &'static str,
    /// What it accepts: `1..=16384`, `finite, >= 0.0`, `finite, 0.01..=1000.0`.
    pub accepts: &'static str,
}

/// A module value whose settings are not what its module accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// A field outside its declared range (or not finite where it must be).
    OutOfRange {
        /// The field.
        field: &'static str,
        /// Its value, as Rust prints it (`100000`, `NaN`, `1e308`).
        value: String,
        /// What it accepts ([`FieldRange::accepts`]).
        accepts: &'static str,
    },
    /// The module's own cross-field check refused the settings together (a frame over
    /// the memory budget).
    Invalid {
        /// What is wrong and what is accepted, from the module's check.
        message: String,
    },
}

impl ConfigProblem {
    /// The field the problem is about, when it is about one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            ConfigProblem::OutOfRange { field, .. } => Some(field),
            ConfigProblem::Invalid { .. } => None,
        }
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigProblem::OutOfRange {
                field,
                value,
                accepts,
            } => write!(
                f,
                "`{field}` = {value} is out of range: it accepts {accepts}"
            ),
            ConfigProblem::Invalid { message } => f.write_str(message),
        }
    }
}

/// A number a `#[config]` field can hold, for the checks the derive generates.
#[doc(hidden)]
pub trait ConfigNumber: Copy + PartialOrd + fmt::Debug {
    /// Whether it is finite (always, for an integer).
    fn config_is_finite(self) -> bool;
}

/// A floating-point number: `finite` applies to it.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`finite` applies to floating-point settings (`f32`, `f64`), and `{Self}` is not one",
    label = "`{Self}` is always finite",
    note = "remove `finite`: an integer setting needs only `range`, `min` or `max`"
)]
pub trait ConfigFloat: ConfigNumber {}

/// A `#[config]` field a range applies to: a number, or an `Option` of one (`None` is
/// always accepted: it means "not set"). Implemented for each number type and its
/// `Option` by name (not for every `ConfigNumber`), so that a range on another type is
/// this one error, on the field's type.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a number: `range`, `min`, `max` and `finite` apply to number settings",
    label = "not a number",
    note = "a range applies to an integer, `f32`, `f64`, or an `Option` of one; check other settings in `#[module(validate = <fn>)]`"
)]
pub trait ConfigValue {
    /// The number checked.
    type Number: ConfigNumber;
    /// The number, or `None` when there is none to check.
    fn config_number(&self) -> Option<Self::Number>;
}

macro_rules! numbers {
    ($($t:ty)*) => {$(
        impl ConfigValue for $t {
            type Number = $t;
            fn config_number(&self) -> Option<$t> {
                Some(*self)
            }
        }
        impl ConfigValue for Option<$t> {
            type Number = $t;
            fn config_number(&self) -> Option<$t> {
                *self
            }
        }
    )*};
}
numbers!(u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64);

macro_rules! integers {
    ($($t:ty)*) => {$(
        impl ConfigNumber for $t {
            fn config_is_finite(self) -> bool {
                true
            }
        }
    )*};
}
integers!(u8 u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize);

impl ConfigNumber for f32 {
    fn config_is_finite(self) -> bool {
        self.is_finite()
    }
}

impl ConfigNumber for f64 {
    fn config_is_finite(self) -> bool {
        self.is_finite()
    }
}

impl ConfigFloat for f32 {}
impl ConfigFloat for f64 {}

/// The bounds of one field, as the derive writes them (`end_exclusive` for `a..b`).
#[doc(hidden)]
pub struct Bounds<N> {
    pub min: Option<N>,
    pub max: Option<N>,
    pub end_exclusive: bool,
    pub finite: bool,
}

/// Compiles only for a floating-point field (or an `Option` of one): what `finite` needs.
#[doc(hidden)]
pub fn assert_float<V: ConfigValue>()
where
    V::Number: ConfigFloat,
{
}

/// Checks `value` against `bounds`: the problem, if it is out of them.
#[doc(hidden)]
///
/// The bounds' type is its own parameter, tied to the value's by the `where` clause (not
/// `Bounds<V::Number>`): a field that is not a number is then one error, not one more for
/// each bound.
pub fn check_field<V, N>(
    field: &'static str,
    value: &V,
    bounds: Bounds<N>,
    accepts: &'static str,
) -> Option<ConfigProblem>
where
    V: ConfigValue<Number = N>,
    N: ConfigNumber,
{
    let number = value.config_number()?;
    // Written so that NaN fails every comparison it is in.
    let above_min = bounds.min.is_none_or(|min| number >= min);
    let below_max = bounds.max.is_none_or(|max| {
        if bounds.end_exclusive {
            number < max
        } else {
            number <= max
        }
    });
    let finite = !bounds.finite || number.config_is_finite();
    if above_min && below_max && finite {
        return None;
    }
    Some(ConfigProblem::OutOfRange {
        field,
        value: format!("{number:?}"),
        accepts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds<N>(min: Option<N>, max: Option<N>, finite: bool) -> Bounds<N> {
        Bounds {
            min,
            max,
            end_exclusive: false,
            finite,
        }
    }

    #[test]
    fn values_outside_the_bounds_are_problems_with_the_value_as_rust_prints_it() {
        let width = |v: u32| {
            check_field(
                "width",
                &v,
                bounds(Some(1), Some(16384), false),
                "1..=16384",
            )
        };
        assert_eq!(width(1), None);
        assert_eq!(width(16384), None);
        assert_eq!(
            width(0).map(|p| p.to_string()).as_deref(),
            Some("`width` = 0 is out of range: it accepts 1..=16384")
        );
        assert!(width(u32::MAX).is_some());
        let fps =
            |v: f64| check_field("fps", &v, bounds(Some(0.01), None, true), "finite, >= 0.01");
        assert_eq!(fps(20.0), None);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(fps(bad).is_some(), "{bad}");
        }
        assert_eq!(
            fps(f64::NAN).map(|p| p.to_string()).as_deref(),
            Some("`fps` = NaN is out of range: it accepts finite, >= 0.01")
        );
        // Only `finite`: NaN and infinities are refused, every finite value accepted.
        let any = |v: f64| check_field("x", &v, bounds(None, None, true), "finite");
        assert_eq!(any(-1e300), None);
        assert!(any(f64::NAN).is_some() && any(f64::NEG_INFINITY).is_some());
    }

    #[test]
    fn an_exclusive_end_and_an_absent_option() {
        let b = |v: u8| {
            check_field(
                "b",
                &v,
                Bounds {
                    min: Some(0),
                    max: Some(10),
                    end_exclusive: true,
                    finite: false,
                },
                "0..10",
            )
        };
        assert_eq!(b(9), None);
        assert!(b(10).is_some());
        let limit = |v: Option<u64>| check_field("limit", &v, bounds(Some(1), None, false), ">= 1");
        assert_eq!(limit(None), None);
        assert!(limit(Some(0)).is_some());
    }
}
