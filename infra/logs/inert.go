package logs

import (
	"fmt"
	"log/slog"

	"github.com/gbresearch/gb/infra/inert"
)

// InertAttrs is a slog.HandlerOptions.ReplaceAttr that makes the text of
// a record inert (inert.Text): its message and every string, error or
// Stringer attribute, which may quote what a model, a page, a message or
// an agent's name wrote, so that no control character (an escape
// sequence, a bidirectional control) reaches a terminal that shows the
// log. JSON escapes the C0 controls but not the C1 or bidirectional ones;
// text quotes them; InertAttrs makes both safe. next, when set, replaces
// the attribute first (Lambda's key names).
func InertAttrs(next func(groups []string, a slog.Attr) slog.Attr) func(groups []string, a slog.Attr) slog.Attr {
	return func(groups []string, a slog.Attr) slog.Attr {
		if next != nil {
			a = next(groups, a)
		}
		switch a.Value.Kind() {
		case slog.KindString:
			if s := a.Value.String(); inert.Unsafe(s) {
				a.Value = slog.StringValue(inert.Text(s))
			}
		case slog.KindAny:
			switch v := a.Value.Any().(type) {
			case error:
				if s := v.Error(); inert.Unsafe(s) {
					a.Value = slog.StringValue(inert.Text(s))
				}
			case fmt.Stringer:
				if s := v.String(); inert.Unsafe(s) {
					a.Value = slog.StringValue(inert.Text(s))
				}
			}
		}
		return a
	}
}
