//! `docs/language.md` documents every keyword of the lexer.
//!
//! The keyword table is read from the lexer's own source (`fn keyword` in
//! `src/lexer.rs`, the only place that turns identifiers into keywords), so adding a
//! keyword to the lexer without documenting it fails this test. The document must
//! list the keywords in the fenced block under its `### Keywords` heading (exactly the
//! lexer's set, no more, no fewer) and mention each of them as `` `kw` `` somewhere
//! else in its text, where the construct is explained.

use std::collections::BTreeSet;

const LEXER: &str = include_str!("../src/lexer.rs");

fn language_md() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/language.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// The keywords of `fn keyword` in the lexer source: every `"word" => Tok::…` arm.
fn lexer_keywords(src: &str) -> Vec<String> {
    let start = src
        .find("fn keyword(")
        .expect("the lexer has no `fn keyword(`: update this test");
    let body = &src[start..];
    let end = body
        .find("_ => return None")
        .expect("`fn keyword` has no `_ => return None` arm: update this test");
    body[..end]
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix('"')?;
            let (word, tail) = rest.split_once('"')?;
            tail.trim_start()
                .starts_with("=> Tok::")
                .then(|| word.to_string())
        })
        .collect()
}

/// The number of keyword variants of `enum Tok` (between `// keywords` and
/// `// punctuation`), to make sure the table above was read completely.
fn keyword_variants(src: &str) -> usize {
    let start = src
        .find("// keywords")
        .expect("`enum Tok` lost its `// keywords` marker");
    let end = src[start..]
        .find("// punctuation")
        .expect("`enum Tok` lost its `// punctuation` marker");
    src[start..start + end]
        .lines()
        .skip(1)
        .filter(|l| l.trim().ends_with(','))
        .count()
}

/// The words of the fenced block under `### Keywords`.
fn documented_list(doc: &str) -> Option<(BTreeSet<String>, std::ops::Range<usize>)> {
    let heading = doc.find("\n### Keywords\n")?;
    let open = heading + doc[heading..].find("\n```")? + 1;
    let body_start = open + doc[open..].find('\n')? + 1;
    let close = body_start + doc[body_start..].find("\n```")?;
    let words = doc[body_start..close]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    Some((words, open..close + 4))
}

/// Everything wrong with `doc` with respect to `keywords`; empty if nothing is.
fn problems(doc: &str, keywords: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let Some((listed, block)) = documented_list(doc) else {
        return vec!["no fenced keyword list under a `### Keywords` heading".into()];
    };
    let lexer: BTreeSet<String> = keywords.iter().cloned().collect();
    for k in lexer.difference(&listed) {
        out.push(format!(
            "keyword `{k}` is missing from the `### Keywords` list"
        ));
    }
    for k in listed.difference(&lexer) {
        out.push(format!(
            "`{k}` is listed as a keyword but the lexer has no such keyword"
        ));
    }
    let prose = format!("{}{}", &doc[..block.start], &doc[block.end..]);
    for k in &lexer {
        if !prose.contains(&format!("`{k}`")) {
            out.push(format!(
                "keyword `{k}` is never explained (no `{k}` outside the list)"
            ));
        }
    }
    out
}

#[test]
fn the_keyword_table_is_read_completely() {
    let kws = lexer_keywords(LEXER);
    assert_eq!(
        kws.len(),
        keyword_variants(LEXER),
        "`fn keyword` and the keyword variants of `enum Tok` disagree: {kws:?}"
    );
    assert!(kws.iter().any(|k| k == "capsule") && kws.iter().any(|k| k == "fork"));
}

#[test]
fn every_lexer_keyword_is_documented() {
    let p = problems(&language_md(), &lexer_keywords(LEXER));
    assert!(p.is_empty(), "docs/language.md:\n{}", p.join("\n"));
}

#[test]
fn a_missing_keyword_is_detected() {
    let doc = language_md();
    // A keyword the lexer has and the document does not.
    let mut kws = lexer_keywords(LEXER);
    kws.push("goto".into());
    let p = problems(&doc, &kws);
    assert!(
        p.iter().any(|m| m.contains("`goto` is missing"))
            && p.iter().any(|m| m.contains("`goto` is never explained")),
        "{p:?}"
    );
    // The same document with `volatile` taken out of its keyword list.
    let (listed, block) = documented_list(&doc).expect("keyword list");
    let kept: Vec<&str> = listed
        .iter()
        .map(String::as_str)
        .filter(|k| *k != "volatile")
        .collect();
    let cut = format!(
        "{}```\n{}\n```{}",
        &doc[..block.start],
        kept.join(" "),
        &doc[block.end..]
    );
    let p = problems(&cut, &lexer_keywords(LEXER));
    assert_eq!(
        p,
        vec!["keyword `volatile` is missing from the `### Keywords` list".to_string()]
    );
}
