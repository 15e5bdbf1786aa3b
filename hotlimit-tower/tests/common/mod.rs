//! What the in-process tests of the layer share: the rate-limit fields parsed as structured
//! fields (`sfv`), so that every test checks the syntax too.
#![allow(dead_code)]

use sfv::{BareItem, List, ListEntry, Parser};

/// One structured-field list item: its string name and integer parameters.
pub(crate) fn items(value: &http::HeaderValue) -> Vec<(String, Vec<(String, i64)>)> {
    let list: List = Parser::parse_list(value.as_bytes()).expect("a structured-field list");
    list.into_iter()
        .map(|entry| match entry {
            ListEntry::Item(item) => {
                let BareItem::String(name) = item.bare_item else {
                    panic!("the policy name must be an sf-string: {item:?}")
                };
                let params = item
                    .params
                    .into_iter()
                    .map(|(k, v)| match v {
                        BareItem::Integer(i) => (k, i),
                        other => panic!("parameter {k} must be an integer: {other:?}"),
                    })
                    .collect();
                (name, params)
            }
            ListEntry::InnerList(l) => panic!("no inner lists expected: {l:?}"),
        })
        .collect()
}

pub(crate) fn params(value: &http::HeaderValue) -> Vec<(String, i64)> {
    let mut all = items(value);
    assert_eq!(all.len(), 1);
    all.remove(0).1
}

/// The `t` of every item of a `RateLimit` value, by policy name (`None`: no `t`), and its `r`.
pub(crate) fn state(value: &http::HeaderValue) -> Vec<(String, i64, Option<i64>)> {
    items(value)
        .into_iter()
        .map(|(name, params)| {
            let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
            let r = get("r").expect("every RateLimit item has r");
            (name, r, get("t"))
        })
        .collect()
}

/// `(q, w)` of every item of a `RateLimit-Policy` value, by policy name.
pub(crate) fn policies(value: &http::HeaderValue) -> Vec<(String, i64, i64)> {
    items(value)
        .into_iter()
        .map(|(name, params)| {
            let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
            (name, get("q").expect("q"), get("w").expect("w"))
        })
        .collect()
}
