package kb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/doctext"
)

// Parts are the pages (slides, sheets) of document id, found from the
// marks doctext left in its body (doctext.PartsOf); none for a document
// without them. A document that starts with a page mark is the only kind
// whose whole body is read for them.
func Parts(ctx context.Context, db DB, dataset string, id int64) ([]doctext.Part, error) {
	var body string
	err := db.QueryRow(ctx, `SELECT CASE WHEN left(body, 8) = '[page 1]' OR left(body, 11) IN ('## Slide 1:', '## Sheet 1:') OR body IN ('## Slide 1', '## Sheet 1')
			OR left(body, 11) IN (E'## Slide 1\n', E'## Sheet 1\n') THEN body ELSE '' END
		FROM gb_kb_documents WHERE dataset = $1 AND id = $2`, dataset, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error reading the pages of document %d: %w", id, err)
	}
	return doctext.PartsOf(body), nil
}
