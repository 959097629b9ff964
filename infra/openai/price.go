package openai

import (
	"regexp"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	// Input is the price of one million prompt tokens.
	Input float64
	// Output is the price of one million completion tokens.
	Output float64
}

// Cost is the price of a call with the given token counts.
func (p Price) Cost(promptTokens, completionTokens int) float64 {
	return (float64(promptTokens)*p.Input + float64(completionTokens)*p.Output) / 1e6
}

// prices are OpenAI's published list prices (standard tier, USD per 1M
// tokens). Cached-input discounts and batch pricing are ignored, so the
// recorded cost is an upper bound. Update when the list changes.
var prices = map[string]Price{
	"gpt-4o":       {Input: 2.50, Output: 10.00},
	"gpt-4o-mini":  {Input: 0.15, Output: 0.60},
	"gpt-4.1":      {Input: 2.00, Output: 8.00},
	"gpt-4.1-mini": {Input: 0.40, Output: 1.60},
	"gpt-4.1-nano": {Input: 0.10, Output: 0.40},
	"o3-mini":      {Input: 1.10, Output: 4.40},
	"o4-mini":      {Input: 1.10, Output: 4.40},
	"gpt-5":        {Input: 1.25, Output: 10.00},
	"gpt-5-mini":   {Input: 0.25, Output: 2.00},
	"gpt-5-nano":   {Input: 0.05, Output: 0.40},
}

// snapshotSuffix matches the date of a pinned snapshot, as in
// gpt-4o-mini-2024-07-18.
var snapshotSuffix = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`)

// PriceOf returns the list price of a model, by exact name or, for a dated
// snapshot, by the name without its date; ok is false for a model not in
// the table.
func PriceOf(model string) (p Price, ok bool) {
	if p, ok := prices[model]; ok {
		return p, true
	}
	p, ok = prices[snapshotSuffix.ReplaceAllString(model, "")]
	return p, ok
}
