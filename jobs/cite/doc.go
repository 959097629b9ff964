// Package cite checks the citations of a report against the text its
// writers actually read. It is pure: no database, no network, no model;
// the same report and documents always give the same verdicts. It may
// import jobs/doctext only (the pages of a source). Its check is
// lexical: the offline answer, and the passage retrieval a model judge
// reads (Pair.Passages).
//
// # Claims
//
// A report is Markdown, read as CommonMark with GFM tables (goldmark), so
// that its blocks are those the dashboard's markdown-it shows. Check
// splits it into claims: each paragraph, each list item's text (nested
// items each on their own, lazy continuation lines joined) and each table
// row is cut into sentences (a sentence ends at '.', '!' or '?' followed
// by the end of the block or by a space and a capital letter, digit,
// quote, backtick or '['; common abbreviations such as "e.g." do not end
// one; nor does a code span's text). Citation markers are "[n]",
// "[n, m]", "[n-m]" (each number of the range) and footnote markers
// "[^n]", outside code spans ("`a[1]`" is code); a "[n](url)" is a link,
// not a marker. Markers written right after a sentence's final
// punctuation belong to that sentence. A list item whose markers all
// stand at its end is one claim, whatever its sentences. Skipped, never
// claims: headings (ATX "# …" and setext, underlined by "===" or "---"),
// code blocks (fenced, in a list item or not, and indented), tables'
// separator rows, thematic breaks, labels (a one-line paragraph that is
// wholly emphasised like "_…_" or "**…**", or short and ending with
// ':'), footnote and link reference definitions ("[^1]: …", "[1]: …")
// wherever they stand, and the sources section (a block ends where it
// begins).
//
// A sentence without markers is uncited, and counted as such when it is
// factual: it holds a number, a name or code (see below), or at least
// five content words. Any other sentence without a marker is not a claim.
//
// # Sources
//
// The sources section starts at a line that is "Sources", "References",
// "Bibliography", "Works cited", "Citations" (and a few such names), as a
// heading of any level, in bold or plain, with or without a colon; it
// ends at the next heading of the same or a higher level (any heading,
// when a plain or bold line opened it). Its entries are numbered lines:
// "[1] …", "1. …", "1) …", "(1) …", "- [1] …", "* [1]: …", "**[1]** …",
// "[^1]: …", "[1]: …". An entry's text gives its title and reference in
// either order: a Markdown link "[title](url)"; else a URL (with a
// scheme, "file:…", or a host such as "pkg.go.dev/x") as the reference
// and the rest, stripped of separators (—, –, -, :, |), quotes and
// brackets, as the title; else the text after the last separator as the
// reference; else the whole text as both. An indented line, or one with a
// URL, that follows an entry continues it. A marker's source is found by
// its reference, compared after normalisation (scheme and host
// lower-cased, "https://" added to a bare host, a "www." prefix, a
// fragment, a trailing '/' and a default port dropped), else by its title
// (or its reference taken as a title) against the documents' titles,
// compared lower-cased with punctuation other than '/' and '.' dropped.
//
// A report with cited claims and no entry at all has SourcesUnparsed set,
// and its cited claims are no_sources: not checked, and not unread
// (inferences and claims of absence keep their kind).
//
// # Parts
//
// A claim whose markers stand in several places is cut after each group
// of adjacent markers: the text before the first group is checked against
// its sources, the text from there to the second group against the
// second's, and so on; text after the last group belongs to the last
// part. A claim with one group of markers, or with a part of fewer than
// three content words, is one part, checked whole against every marker.
//
// # Documents
//
// A document's text is cut into paragraphs at blank lines, after each
// line's wrapping artefacts are removed (its indent, a comment's "//", a
// quote's ">", a list bullet); a paragraph's lines are joined with
// spaces, so a sentence wrapped over any number of lines is whole again.
// A paragraph's first line stands alone as a definition when it is a
// declaration or heading ("func …", "type …", "var …", "const …",
// "package …", "# …"), or has six words or fewer, no final punctuation,
// and a next line that does not start in lower case (a setting's name
// line, a section title). Each sentence is headed by the nearest
// definition at or before it. Paragraphs are cut into sentences as
// claims are. The document's subject is its title and first Window
// sentences; the packages it is about are named by "package x" in its
// title or first lines, "x package" opening its title, or a pkg.go.dev
// reference (each known by its path and its last element).
//
// Passages are windows of the text: every run of up to Window (3)
// consecutive sentences, and every run of up to three consecutive
// paragraphs of at most 1,200 characters; each with the definition that
// heads its first sentence, when that stands before it.
//
// # What a claim requires
//
// In a part, with its markers, Markdown emphasis and links removed:
//
//   - numbers: digit runs not part of a word ("1.21", "64", "2008"),
//     thousands separators ignored, and numbers in words ("forty", "two
//     hundred", "a dozen", "half", "twenty-five"; "one" only before a time
//     unit, as "one of them" is a pronoun). A number followed by a time
//     unit (ns, µs, ms, s, sec, second, min, minute, h, hour, day, or
//     "* time.Second" and the like) is also held as a length of time, so
//     "one minute" matches "60 seconds" and "90 * time.Second" matches
//     "ninety seconds". A passage holds a number in digits, in words or as
//     the same length of time; "1.21.3" holds "1.21".
//   - code: each identifier of a code span (text between backticks) that
//     is qualified or has a capital or '_' ("signal.NotifyContext",
//     "(*Server).Shutdown" read as "Server.Shutdown"), and identifiers
//     written without backticks (an inner capital after a lower-case
//     letter, or '_' or '.' between letters). A passage holds an
//     identifier written whole; or, when its qualifier names a package the
//     document is about (or is a lower-case name no document's package
//     has: a variable), its rest; or, for "T.M", M as a word and T as a
//     word in any case, as Go writes a receiver ("func (s *T) M"). A code
//     span without such identifiers requires its words of three letters
//     or more as names when it is a command ("shopt -s globstar"), or else
//     itself, spaces collapsed; a package path ("database/sql") or text
//     of the document's subject holds everywhere in the document.
//   - names: acronyms ("TLS", "HTTP/2"), words with a digit next to a
//     letter ("riscv64"), and capitalised words that do not open a
//     sentence or clause (first word, or after '.', '!', '?', ':', ';', a
//     dash, an opening parenthesis or quote) and are not stop words or
//     ordinary words a writer capitalises ("Note", "Importantly",
//     "Server"…). A name holds when it is a whole word, ignoring case,
//     anywhere in the document.
//   - quoted phrases: text of two words or more between double quotes
//     (straight or curly), cut at ellipses, which must appear in the
//     passage ignoring case, quotes' shapes, backticks and spacing.
//   - content words: lower-cased words of two characters or more that are
//     not stop words or numbers, stemmed by the Snowball (Porter2) English
//     stemmer after a final "'s" is dropped (github.com/kljensen/snowball,
//     which the offline policy uses too).
//
// A passage's score is the weighted share of the part's distinct content
// stems it holds (its definition included): a stem weighs 1 + ln(n/(1+d))
// (at least 0.5), n the document's sentences and d those that hold it,
// and a stem no sentence holds weighs the mean of the others. The
// passages are ranked by fewest missing required items, then highest
// score, then fewest characters, then earliest.
//
// # Sense
//
// A passage good enough to support a part may still say something else.
// Its closest sentence (the one sharing the most content stems with the
// part) and its clauses are compared with the part:
//
//   - negation: text is cut into clauses at punctuation and at
//     subordinators (but, whereas, while, so that, when, whenever, if,
//     unless, because, since, although, though). A clause is denied by
//     not, no, never, none, nothing, neither, nor (when no denial came
//     before in it), without, cannot and "n't", prevent, avoid, unable,
//     lack, fail; "rather than", "instead of", "to prevent" and "to
//     avoid" deny what follows them in a clause of their own; "whether or
//     not" and "not only" deny nothing; "non-nil" is one word. A denial
//     counts where its scope (the words after it, up to "and", "or" or
//     "then"; only the next two content words after prevent, avoid,
//     unable, lack or fail; the whole clause when none follow) meets the
//     other clause.
//     An antonym ("disabled", "unbuffered", "asynchronous", "lower",
//     "unsafe", "non-nil", "background", …) stands for the word it denies
//     and counts as a denial where the other clause has that word. Each
//     clause of the part with three content stems or more is matched to
//     the passage's clauses that share three fifths of its stems or three
//     quarters of theirs (two at least), the best first; the senses differ
//     when every best match is denied an odd number of times where the
//     part's clause is not, or the other way round. They also differ when
//     the passage denies a word (the first content word after a negation)
//     that the part asserts and that no undenied clause of the passage
//     holds.
//   - swapped terms: the part restates the closest sentence (each holds
//     three quarters of the other's stems, four at least) with two of its
//     words, not neighbours, exchanged; or two of its terms (identifiers,
//     names) each stand, in the part's clauses cut also at "and" and "or",
//     with the words the sentence gives the other term and none of its
//     own; or "respectively" pairs them in the other order.
//   - subject: the part's first exported identifier is named neither in
//     the closest sentence nor in the definition heading it.
//   - absolutes: the part says "always", "only", "every", "guaranteed",
//     "entirely" or "exactly" (or a word of the same class) and the
//     passage has no word of that class.
//
// # Verdicts
//
// Each marker of a part gets one verdict, a pair:
//
//   - unread: the marker has no entry in the sources section, or its entry
//     matches no document the writers read: none at all (an invented URL),
//     one they were only shown (a search result's snippet), or one whose
//     fetch gave no text.
//   - unsupported: the best passage lacks a required item (the reason
//     names it), or its score is below WeakAt (0.34).
//   - weak: every required item is there and the score is at least WeakAt
//     but below SupportedAt (0.6); or the score is at least SupportedAt
//     but the part's subject or absolute word is not in the passage.
//   - contradicted: every required item is there and the score is at least
//     SupportedAt, but the negations differ or terms are swapped.
//   - supported: every required item is there, the score is at least
//     SupportedAt, and the senses agree.
//
// When the best passage's sense differs, the next ranked passages (up to
// 20, while they miss nothing and score at least SupportedAt and at least
// the best's score less 0.15) are tried, and the first whose sense agrees
// supports the part. A pair keeps up to three passages (Passages, each at
// most 1,000 characters, best first and not overlapping; Passage is the
// first) for a judge to read.
//
// A part's verdict is the best of its pairs (supported, weak,
// unsupported, contradicted, unread, no_sources): one good source is
// enough. A claim's verdict is the gravest of its parts' (contradicted,
// no_sources, unread, unsupported, weak, supported).
//
// Two kinds of claim are not checked against their sources, and every
// pair of theirs carries their kind: inference, a claim its writer marks
// as their own reasoning ("(inference)", "I infer", "This suggests",
// "Presumably", "It follows that", "likely", …); and absence, a claim that
// a source says nothing of something ("does not document, mention or
// describe", "no … is documented", "says nothing about", "gives no … " of
// a document, …). Both are counted apart and never flagged. Flag marks
// only unsupported, contradicted and unread claims, with " ⚠ " and the
// verdict.
//
// A marker may name a page of its source ("[3, p. 7]", "[2, slide 4]");
// a pair says the page its passage is on when the source has pages
// (jobs/doctext's marks), and its reason says so when the claim cites
// another.
package cite
