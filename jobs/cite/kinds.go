package cite

import "regexp"

var (
	// inferenceRE finds a claim its writer marks as an inference of their
	// own rather than what a source says.
	inferenceRE = regexp.MustCompile(`(?i)\((?:my |an? |by )?inference\b[^)]*\)|\binferred\)|\bI (?:infer|conclude|deduce|suspect|assume|would guess)\b|` +
		`\b(?:this|which|that|these|it) (?:suggests|implies|indicates)\b|\bpresumably\b|^\W*(?:probably|likely)\b|` +
		`\bit (?:follows|seems|appears) that\b|\b(?:is|are|was|were|be|seems|most) likely\b|\blikely (?:to|that)\b|\bby inference\b|` +
		`\b(?:my|our) (?:reading|inference|interpretation)\b|^\W*inference\b`)
	// absenceRE finds a claim that a source says nothing of something.
	absenceRE = regexp.MustCompile(`(?i)\b(?:does|do|did)(?:n't| not)\s+(?:\w+\s+)?(?:document|mention|describe)s?\b|` +
		`\b(?:is|are|was|were)(?:n't| not)\s+(?:\w+\s+)?(?:documented|mentioned|described)\b|` +
		`\bno\b[^.;]{0,80}?\b(?:is|are|was|were)\s+(?:\w+\s+)?(?:documented|mentioned|described|specified|given|listed|stated|defined)\b|` +
		`\b(?:says?|said|mentions?|documents?)\s+nothing\b|\bmakes? no (?:mention|claim|statement)\b|\b(?:is|are) silent\b|` +
		`\bundocumented\b|\bnowhere (?:in|does)\b|\bthere is no (?:mention|documentation|statement|description)\b|` +
		`\b(?:none|neither) of (?:the|these|its) (?:sources|documents|docs|pages)\b`)
	// noneGivenRE is a document said to give none of something: "the docs
	// give no default", "the guide offers no way", "nothing in the docs
	// mentions" (a claim of absence when it speaks of a document).
	noneGivenRE = regexp.MustCompile(`(?i)\b(?:gives?|offers?|states?|provides?|lists?|documents?|mentions?|specif(?:y|ies)|names?|shows?|has|have|contains?|includes?)\s+no\b|` +
		`\bnothing in\b|\bno (?:mention|word|statement|documentation)\b`)
	// weakAbsenceRE is a denial that is a claim of absence only when the
	// claim speaks of a document ("the docs do not specify").
	weakAbsenceRE = regexp.MustCompile(`(?i)\b(?:does|do|did)(?:n't| not)\s+(?:\w+\s+)?(?:specify|state|say|cover|discuss|list|define|explain|address)\b|` +
		`\b(?:is|are|was|were)(?:n't| not)\s+(?:\w+\s+)?(?:specified|stated|covered|discussed|listed|defined|explained|addressed)\b`)
	docNounRE = regexp.MustCompile(`(?i)\b(?:documentation|docs?|doc comments?|godoc|manual|spec|specification|guide|page|article)\b`)
)

// kind classifies a claim: Inference when its writer marks it as their
// inference, Absence when it says a source is silent on something, ""
// otherwise.
func kind(claim string) Verdict {
	switch {
	case inferenceRE.MatchString(claim):
		return Inference
	case absenceRE.MatchString(claim), (weakAbsenceRE.MatchString(claim) || noneGivenRE.MatchString(claim)) && docNounRE.MatchString(claim):
		return Absence
	}
	return ""
}
