//! The decision log's JSON form: what is encoded reads back, bad blocks are errors.

use super::encoding::{decode, encode_stored};
use super::records::OPTIONAL;
use super::*;

fn record(at_ms: i64, texts: [&str; TEXT_COUNT]) -> PackedDecision {
    PackedDecision::new(at_ms, texts, 7, u64::MAX >> 2)
}

/// Texts that JSON escapes, and the largest numbers, read back as written.
#[test]
fn a_block_reads_back_what_was_encoded() {
    let hostile = [
        "t",
        "\"quoted\"",
        "back\\slash",
        "nul\0byte",
        "line\nbreak\r\t",
        "\u{1}\u{1f}\u{7f}",
        "é ü 中文 🙂",
        "</script>",
        "",
        "a:b",
        "[1,2]",
        "{\"k\":1}",
        "\u{2028}\u{2029}",
        "x".repeat(300).leak(),
        "ALLOW",
        "",
        "contractors,pii",
        "zip\nfake root",
        "/home/dev/proj",
        "toolu_01\"id\"",
    ];
    let mut counted = record(i64::MAX, hostile);
    counted.count = u64::MAX;
    counted.first_at_ms = i64::MIN;
    let records = [record(i64::MIN, hostile), counted];
    let encoded = EncodedDecisions::from(&[&records[0], &records[1]][..]);
    let ids = [u64::MAX >> 1, 0];
    let mut read = Vec::new();
    for (i, id) in ids.into_iter().enumerate() {
        let r = encoded.decode(i, id).unwrap();
        assert_eq!(r.id, id);
        assert_eq!(PackedDecision::from(&r.decision), records[i]);
        assert_eq!(encoded.team(i), b"t");
        read.push(r);
    }
    let body = encode_stored(&read);
    assert_eq!(decode(&body).unwrap(), read);
}

#[test]
fn an_unreadable_block_is_an_error_not_an_empty_page() {
    // a record made in no group has the older form: no groups text
    let texts = vec!["\"\""; OPTIONAL].join(",");
    let whole = format!("[[1,2,{texts},3,4]]");
    assert_eq!(decode(&whole).unwrap()[0].decision.revision, 4);
    let grouped = format!("[[1,2,{texts},\"a,b\",3,4,5,1]]");
    let read = decode(&grouped).unwrap();
    assert_eq!(
        (read[0].decision.groups.as_str(), read[0].decision.count),
        ("a,b", 5)
    );
    let mut none = read[0].decision.clone();
    none.groups.clear();
    let encoded = EncodedDecisions::from(&[&PackedDecision::from(&none)][..]);
    let tail = String::from_utf8(encoded.tail(0).to_vec()).unwrap();
    assert_eq!(tail.matches("\"\"").count(), OPTIONAL, "{tail}");
    // unknown effects without groups: the groups written empty before them
    none.effects_unknown = "zip".into();
    let encoded = EncodedDecisions::from(&[&PackedDecision::from(&none)][..]);
    let tail = String::from_utf8(encoded.tail(0).to_vec()).unwrap();
    assert!(tail.ends_with(",\"\",\"zip\",3,4,5,1]"), "{tail}");
    let read = encoded.decode(0, 1).unwrap().decision;
    assert_eq!(
        (read.groups.as_str(), read.effects_unknown.as_str()),
        ("", "zip")
    );
    // the client's id alone: the three optional texts before it written empty
    let mut id_only = none.clone();
    id_only.effects_unknown.clear();
    id_only.tool_use_id = "toolu_1".into();
    let encoded = EncodedDecisions::from(&[&PackedDecision::from(&id_only)][..]);
    let tail = String::from_utf8(encoded.tail(0).to_vec()).unwrap();
    assert!(tail.contains(",\"\",\"\",\"\",\"toolu_1\","), "{tail}");
    assert_eq!(encoded.decode(0, 1).unwrap().decision, id_only);
    let counted = format!("[[1,2,{texts},3,4,5,1]]");
    let read = decode(&counted).unwrap();
    assert_eq!(
        (read[0].decision.count, read[0].decision.first_at_ms),
        (5, 1)
    );
    let long = format!("[[1,2,{texts},3,4,5]]");
    let longer = format!("[[1,2,{texts},3,4,5,1,0]]");
    let count_of_one = format!("[[1,2,{texts},3,4,1,1]]");
    let first_after_last = format!("[[1,2,{texts},3,4,5,9]]");
    let short = format!("[[1,2,{texts},3]]");
    let negative = format!("[[-1,2,{texts},3,4]]");
    let too_many_texts = format!("[[1,2,{texts},\"a\",\"b\",\"c\",\"d\",\"e\",3,4]]");
    for bad in [
        "",
        "[",
        "[[1]]",
        "{}",
        "[[1,2,\"a\"]]",
        &long,
        &longer,
        &count_of_one,
        &first_after_last,
        &short,
        &negative,
        &too_many_texts,
    ] {
        assert!(decode(bad).is_err(), "{bad:?}");
    }
    assert!(decode("[]").unwrap().is_empty());
}

#[test]
fn packed_records_unpack_to_their_texts() {
    let texts: [&str; TEXT_COUNT] = std::array::from_fn(|i| ["", "a", "bc", "é"][i % 4]);
    let d = record(5, texts);
    assert_eq!(d.texts(), texts);
    assert_eq!(PackedDecision::from(d.unpack()), d);
}
