// Package cite checks the citations of a report against the text its
// writers actually read. It is pure: no database, no network, no model;
// the same report and documents always give the same verdicts. It may
// import nothing of the project, only the standard library.
//
// # Claims
//
// A report is Markdown. Check splits it into claims: each paragraph and
// each list item is cut into sentences (a sentence ends at '.', '!' or '?'
// followed by the end of the block or by a space and a capital letter,
// digit, quote, backtick or '['; common abbreviations such as "e.g." do
// not end one). Citation markers are "[n]" or "[n, m]" (several numbers
// separated by commas); markers written right after a sentence's final
// punctuation belong to that sentence. A list item whose markers all
// stand at its end is one claim, whatever its sentences. Skipped, never
// claims: headings, fenced code blocks, tables' separator rows, horizontal
// rules, labels (a line that is wholly emphasised like "_…_" or "**…**",
// or a short line ending with ':'), and the sources section: from a
// heading or a line named "Sources" or "References" to the next heading of
// the same or a higher level, or the end of the report.
//
// The sources section gives each marker its source: a line "[n] title —
// ref" (also "- [n] …", "[n]: …", and a Markdown link "[title](url)"),
// where ref is the text after the last " — " (or " - "), else the line's
// last URL-like token, else the whole rest of the line. References are
// compared after normalisation: scheme and host lower-cased, a "www."
// prefix, a fragment, a trailing '/' and a default port dropped.
//
// A sentence without markers is uncited, and counted as such when it is
// factual: it holds a number or a name (see below), or at least five
// content words. Any other sentence without a marker is not a claim.
//
// # Verdicts
//
// Each claim–source pair gets one verdict:
//
//   - unread: the marker has no entry in the sources section, or its
//     reference matches no document the writers read: none at all (an
//     invented URL), one they were only shown (a search result's snippet),
//     or one whose fetch gave no text.
//   - unsupported, weak or supported: decided on the best passage of the
//     document's text, as follows.
//
// The document's text is cut into sentences (at line breaks and at
// sentence ends as above), and passages are windows of up to Window
// (3) consecutive sentences, every start position taken. In the claim,
// with its markers and Markdown emphasis removed, the test finds:
//
//   - required items, which must appear in the passage:
//   - numbers: digit runs with inner '.' or ',' ("1.21", "64", "2008"),
//     thousands separators ignored, and the words "zero" and "two" to
//     "twelve" ("one" is too often a pronoun); a passage holds a number
//     when it has it in digits or as one of those words, and "1.21.3"
//     holds "1.21";
//   - code spans (text between backticks), which must appear verbatim,
//     spaces collapsed;
//   - names: a word that is not the first of its sentence and starts with
//     a capital letter, or any identifier-like word (with an inner
//     capital, '_', '.', '/' or a digit between letters, or wholly in
//     capitals of two letters or more); a name must appear as a whole word
//     of the passage, ignoring case, or of the document's subject (its
//     title and its first Window sentences), which holds for every
//     passage of it;
//   - quoted phrases: text of two words or more between double quotes
//     (straight or curly), which must appear in the passage, ignoring case
//     and collapsing spaces;
//   - content words: lower-cased words of two characters or more that are
//     not stop words, lightly stemmed (a final "'s", then one suffix of
//     "ies"→"y", "ied"→"y", "ing", "ed", "es" after s/x/z/ch/sh, or "s"
//     but not "ss", removed when three characters remain; then a final 'e'
//     dropped and a final doubled consonant made single).
//
// A passage's score is the share of the claim's distinct content stems
// that occur in it. The best passage is the one with every required item
// and the highest score; when none has every required item, the one with
// the fewest missing items and then the highest score. Ties go to the
// earliest passage. Then:
//
//   - supported: every required item is in the passage and its score is at
//     least SupportedAt (0.6);
//   - weak: every required item is in the passage and its score is at least
//     WeakAt (0.34);
//   - unsupported: otherwise; the pair's reason names what is missing.
//
// A claim's own verdict is the best of its pairs (supported, weak,
// unsupported, unread, in that order): one good source is enough.
package cite
