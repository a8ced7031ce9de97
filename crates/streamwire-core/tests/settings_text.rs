//! QoS and codec parameters from text: `FromStr` accepts what `Display` prints, serde
//! writes that same text (or a table) and reads it back, and refusals say what is valid.

use proptest::prelude::*;
use streamwire_core::text::ParseError;
use streamwire_core::{CodecParams, Durability, History, Qos, Reliability};

fn reliability() -> impl Strategy<Value = Reliability> {
    prop_oneof![Just(Reliability::Reliable), Just(Reliability::BestEffort)]
}

fn durability() -> impl Strategy<Value = Durability> {
    prop_oneof![Just(Durability::Volatile), Just(Durability::TransientLocal)]
}

fn history() -> impl Strategy<Value = History> {
    prop_oneof![(1u32..).prop_map(History::KeepLast), Just(History::KeepAll)]
}

fn qos() -> impl Strategy<Value = Qos> {
    (reliability(), durability(), history()).prop_map(|(reliability, durability, history)| Qos {
        reliability,
        durability,
        history,
    })
}

/// Keys and values as codecs use them: words and numbers, no `,` or `=`.
fn params() -> impl Strategy<Value = CodecParams> {
    proptest::collection::btree_map("[a-z][a-z0-9_]{0,12}", "[A-Za-z0-9_.+-]{1,8}", 0..5).prop_map(
        |map| {
            map.into_iter()
                .fold(CodecParams::new(), |params, (k, v)| params.with(k, v))
        },
    )
}

/// `value` survives Display -> FromStr and serde JSON.
fn round_trips<T>(value: &T)
where
    T: std::fmt::Display
        + std::str::FromStr<Err = ParseError>
        + serde::Serialize
        + serde::de::DeserializeOwned
        + PartialEq
        + std::fmt::Debug,
{
    let text = value.to_string();
    let parsed = text
        .parse::<T>()
        .unwrap_or_else(|e| panic!("{text:?} does not parse back: {e}"));
    assert_eq!(&parsed, value, "text {text:?}");
    let json = serde_json::to_string(value).unwrap_or_else(|e| panic!("{value:?}: {e}"));
    let read = serde_json::from_str::<T>(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
    assert_eq!(&read, value, "json {json}");
}

proptest! {
    #[test]
    fn reliability_round_trips(value in reliability()) { round_trips(&value); }

    #[test]
    fn durability_round_trips(value in durability()) { round_trips(&value); }

    #[test]
    fn history_round_trips(value in history()) { round_trips(&value); }

    #[test]
    fn qos_round_trips(value in qos()) { round_trips(&value); }

    #[test]
    fn qos_reads_its_parts_in_any_order(value in qos()) {
        let text = format!("{}, {}, {}", value.history, value.reliability, value.durability);
        prop_assert_eq!(text.parse::<Qos>().unwrap(), value);
    }

    #[test]
    fn codec_params_round_trip(value in params()) { round_trips(&value); }
}

#[test]
fn serde_forms_are_the_text_forms() {
    assert_eq!(
        serde_json::to_string(&Reliability::BestEffort).unwrap(),
        r#""best_effort""#
    );
    assert_eq!(
        serde_json::to_string(&History::KeepLast(5)).unwrap(),
        r#""keep_last(5)""#
    );
    assert_eq!(
        serde_json::to_string(&Qos::DEFAULT).unwrap(),
        r#"{"reliability":"reliable","durability":"volatile","history":"keep_last(10)"}"#
    );
    assert_eq!(
        serde_json::to_string(&CodecParams::new().with("jpeg_quality", 90)).unwrap(),
        r#"{"jpeg_quality":"90"}"#
    );
}

#[test]
fn qos_reads_text_or_a_partial_table() {
    let sensor = Qos {
        reliability: Reliability::BestEffort,
        history: History::KeepLast(1),
        ..Qos::DEFAULT
    };
    assert_eq!(
        serde_json::from_str::<Qos>(r#""best_effort, keep_last(1)""#).unwrap(),
        sensor
    );
    assert_eq!(
        serde_json::from_str::<Qos>(r#"{"reliability":"best-effort","history":"keep_last(1)"}"#)
            .unwrap(),
        sensor
    );
    // The port attribute's spelling and any case.
    assert_eq!("BEST_EFFORT, depth = 1".parse::<Qos>().unwrap(), sensor);
}

#[test]
fn codec_params_read_numbers_and_booleans_from_a_table() {
    let params: CodecParams =
        serde_json::from_str(r#"{"jpeg_quality": 90, "drop_alpha": true, "scale": 0.5}"#).unwrap();
    assert_eq!(
        params.to_string(),
        "drop_alpha=true, jpeg_quality=90, scale=0.5"
    );
    let from_text: CodecParams = serde_json::from_str(r#""jpeg_quality=90""#).unwrap();
    assert_eq!(from_text.get("jpeg_quality"), Some("90"));
    assert_eq!("".parse::<CodecParams>().unwrap(), CodecParams::new());
}

#[test]
fn refusals_list_what_is_valid() {
    let errors = [
        "reliabel".parse::<Reliability>().unwrap_err(),
        "durable".parse::<Durability>().unwrap_err(),
        "keep_last(0)".parse::<History>().unwrap_err(),
        "keep_first".parse::<History>().unwrap_err(),
        "best_effort, reliable".parse::<Qos>().unwrap_err(),
        "fast".parse::<Qos>().unwrap_err(),
        "".parse::<Qos>().unwrap_err(),
        "jpeg_quality".parse::<CodecParams>().unwrap_err(),
        "jpeg_quality=90, jpeg_quality=80"
            .parse::<CodecParams>()
            .unwrap_err(),
        "=90".parse::<CodecParams>().unwrap_err(),
    ];
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    insta::assert_snapshot!(text.join("\n"));
}

#[test]
fn serde_refusals_carry_the_parse_error() {
    let error = serde_json::from_str::<Qos>(r#"{"reliability":"sometimes"}"#).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("expected one of `reliable`, `best_effort`"),
        "{error}"
    );
    let error = serde_json::from_str::<Qos>(r#"{"latency":"low"}"#).unwrap_err();
    assert!(
        error.to_string().contains("unknown field `latency`"),
        "{error}"
    );
}
