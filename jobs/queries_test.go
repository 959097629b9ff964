package jobs

import (
	"maps"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// placeholderRE finds the @name placeholders of a statement.
var placeholderRE = regexp.MustCompile(`@([a-z_]+)`)

// checkNamedArgs fails unless args name exactly the placeholders of sql:
// pgx sends NULL for a placeholder no argument names, and ignores an
// argument no placeholder names.
func checkNamedArgs(t *testing.T, name, sql string, args pgx.NamedArgs) {
	t.Helper()
	want := map[string]bool{}
	for _, m := range placeholderRE.FindAllStringSubmatch(sql, -1) {
		want[m[1]] = true
	}
	got := slices.Sorted(maps.Keys(args))
	if names := slices.Sorted(maps.Keys(want)); !slices.Equal(got, names) {
		t.Errorf("%s: arguments %v, placeholders %v", name, got, names)
	}
}

func TestRecordArgsNameEveryPlaceholder(t *testing.T) {
	c := &stepCommit{turn: &turn{}, step: 3}
	rec, err := newRecord(c, &Run{ID: 7, State: StateThinking}, &toolEnv{}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	checkNamedArgs(t, "recordStepSQL", recordStepSQL, rec.args)
	if rec.args["run"] != int64(7) || rec.args["step"] != 3 {
		t.Errorf("run and step: %v, %v", rec.args["run"], rec.args["step"])
	}
}

func TestStateArgsNameEveryPlaceholder(t *testing.T) {
	args := stateArgs(7, StateWaiting, 2)
	checkNamedArgs(t, "addStateSQL", addStateSQL, args)
	checkNamedArgs(t, "setStateSQL", setStateSQL, args)
}

// TestRecordStepRewrittenAsPgxDoes checks that recordStep, rewritten once,
// is the statement and the arguments pgx's NamedArgs makes of
// recordStepSQL on each call.
func TestRecordStepRewrittenAsPgxDoes(t *testing.T) {
	c := &stepCommit{turn: &turn{}, step: 3}
	rec, err := newRecord(c, &Run{ID: 7, State: StateThinking}, &toolEnv{}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	sql, args, err := rec.args.RewriteQuery(t.Context(), nil, recordStepSQL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if recordStep.sql != sql {
		t.Errorf("rewritten once:\n%s\npgx:\n%s", recordStep.sql, sql)
	}
	got := recordStep.args(rec.args)
	if len(got) != len(args) {
		t.Fatalf("%d arguments, pgx %d", len(got), len(args))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], args[i]) {
			t.Errorf("argument $%d (%s): %v, pgx %v", i+1, recordStep.names[i], got[i], args[i])
		}
	}
}
