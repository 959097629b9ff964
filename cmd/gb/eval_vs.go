package main

import (
	"fmt"
	"io"
	"strings"
)

// printEvalVs prints two configurations' results side by side, question
// by question, with their totals and medians, then the differences: the
// facts one found and the other missed, answers that changed, and how
// much more or less the second spent.
func printEvalVs(w io.Writer, set *evalSet, a, b *evalConfig, ra, rb []evalResult) error {
	fmt.Fprintf(w, "%s: A = model %s%s\n%s  B = model %s%s\n\n", set.Name, a.Model, a.describe(),
		strings.Repeat(" ", len(set.Name)), b.Model, b.describe())
	t := newTable(w, "QUESTION", "FACTS A", "FACTS B", "ANSWER A", "ANSWER B", "SUP/CLAIMS A", "SUP/CLAIMS B",
		"TOKENS A", "TOKENS B", "COST A", "COST B", "WALL A", "WALL B", "AGENTS A/B", "STEPS A/B")
	for i := range set.Questions {
		x, y := ra[i], rb[i]
		q := &set.Questions[i]
		t.row(x.Question, facts(x), facts(y), answerVerdict(q, x), answerVerdict(q, y), supported(x.Citations), supported(y.Citations),
			fmt.Sprint(x.Tokens), fmt.Sprint(y.Tokens), fmt.Sprintf("$%.4f", x.CostUSD), fmt.Sprintf("$%.4f", y.CostUSD),
			fmt.Sprintf("%.1fs", x.WallSeconds), fmt.Sprintf("%.1fs", y.WallSeconds),
			fmt.Sprintf("%d/%d", x.Agents, y.Agents), fmt.Sprintf("%d/%d", x.Steps, y.Steps))
	}
	sa, sb := summarize(ra), summarize(rb)
	t.row("TOTAL", ratio(sa.FactsFound, sa.FactsTotal), ratio(sb.FactsFound, sb.FactsTotal),
		fmt.Sprintf("%d/%d right", sa.Honest, sa.Questions), fmt.Sprintf("%d/%d right", sb.Honest, sb.Questions),
		supported(sa.Citations), supported(sb.Citations), fmt.Sprint(sa.Tokens), fmt.Sprint(sb.Tokens),
		fmt.Sprintf("$%.4f", sa.CostUSD), fmt.Sprintf("$%.4f", sb.CostUSD), fmt.Sprintf("%.1fs", sa.WallSeconds),
		fmt.Sprintf("%.1fs", sb.WallSeconds), fmt.Sprintf("%d/%d", sa.Agents, sb.Agents), fmt.Sprintf("%d/%d", sa.Steps, sb.Steps))
	t.row("MEDIAN", "", "", "", "", "", "", fmt.Sprint(sa.MedianTokens), fmt.Sprint(sb.MedianTokens),
		fmt.Sprintf("$%.4f", sa.MedianCostUSD), fmt.Sprintf("$%.4f", sb.MedianCostUSD),
		fmt.Sprintf("%.1fs", sa.MedianWallSeconds), fmt.Sprintf("%.1fs", sb.MedianWallSeconds),
		fmt.Sprintf("%g/%g", sa.MedianAgents, sb.MedianAgents), fmt.Sprintf("%g/%g", sa.MedianSteps, sb.MedianSteps))
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	diffs := evalDiffs(set, ra, rb)
	if len(diffs) == 0 {
		fmt.Fprintln(w, "Differences: none in facts or answers.")
	} else {
		fmt.Fprintln(w, "Differences (B against A):")
		for _, d := range diffs {
			fmt.Fprintln(w, "  "+d)
		}
	}
	fmt.Fprintf(w, "  facts %+d, right answers %+d, tokens %s, cost %s, wall time %s\n",
		sb.FactsFound-sa.FactsFound, sb.Honest-sa.Honest, change(float64(sa.Tokens), float64(sb.Tokens)),
		change(sa.CostUSD, sb.CostUSD), change(sa.WallSeconds, sb.WallSeconds))
	return nil
}

// evalDiffs lists, per question, the facts B found that A missed and
// those it lost, and an answer whose verdict changed.
func evalDiffs(set *evalSet, ra, rb []evalResult) []string {
	var out []string
	for i := range set.Questions {
		q := &set.Questions[i]
		x, y := ra[i], rb[i]
		gained := minus(y.Score.Found, x.Score.Found)
		lost := minus(x.Score.Found, y.Score.Found)
		var parts []string
		if len(gained) > 0 {
			parts = append(parts, "finds "+strings.Join(gained, "; "))
		}
		if len(lost) > 0 {
			parts = append(parts, "misses "+strings.Join(lost, "; "))
		}
		if va, vb := answerVerdict(q, x), answerVerdict(q, y); va != vb {
			parts = append(parts, fmt.Sprintf("answer %s → %s", va, vb))
		}
		if x.Status != y.Status {
			parts = append(parts, fmt.Sprintf("status %s → %s", x.Status, y.Status))
		}
		if len(parts) > 0 {
			out = append(out, q.ID+": "+strings.Join(parts, ", "))
		}
	}
	return out
}

// minus is the items of a not in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// supported is "supported/claims", "-" without a citation check.
func supported(c *citationCounts) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", c.Supported, c.Claims)
}

// change is how b differs from a, as a signed percentage ("=" when equal).
func change(a, b float64) string {
	switch {
	case a == b:
		return "="
	case a == 0:
		return fmt.Sprintf("+%.4g (from 0)", b)
	}
	return fmt.Sprintf("%+.0f%%", 100*(b-a)/a)
}
