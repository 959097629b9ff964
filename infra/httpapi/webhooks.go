package httpapi

import (
	"net/http"

	"github.com/gbresearch/gb/jobs"
)

// WebhookRoutes are the routes of the caller's webhooks: the default URL
// of their researches, the signing secret, and each research's
// deliveries. They take a key like Routes, and are kept apart from Routes
// until the deployment template routes them too.
var WebhookRoutes = []Route{
	{"GET", "/v1/gb/webhooks"},
	{"PUT", "/v1/gb/webhooks"},
	{"GET", "/v1/gb/webhooks/secret"},
	{"POST", "/v1/gb/webhooks/secret/rotate"},
	{"GET", "/v1/gb/research/{id}/webhooks"},
}

// webhookFields are the JSON fields of the body of PUT /v1/gb/webhooks.
var webhookFields = []string{"url"}

// webhookHandlers are the handlers of WebhookRoutes.
func (a *api) webhookHandlers() map[Route]http.HandlerFunc {
	return map[Route]http.HandlerFunc{
		{"GET", "/v1/gb/webhooks"}:                a.getWebhooks,
		{"PUT", "/v1/gb/webhooks"}:                a.putWebhooks,
		{"GET", "/v1/gb/webhooks/secret"}:         a.getWebhookSecret,
		{"POST", "/v1/gb/webhooks/secret/rotate"}: a.rotateWebhookSecret,
		{"GET", "/v1/gb/research/{id}/webhooks"}:  a.researchWebhooks,
	}
}

// getWebhooks answers the caller's webhook settings.
func (a *api) getWebhooks(w http.ResponseWriter, r *http.Request) {
	s, err := jobs.GetWebhookSettings(r.Context(), a.Service.Pool(), userID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// putWebhooks sets or removes (null or "") the default webhook URL of the
// caller's researches, checked as a research's own is.
func (a *api) putWebhooks(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		URL *string `json:"url"`
	}
	if e := decodeStrict(body, &req, webhookFields); e != nil {
		writeError(w, http.StatusBadRequest, e.Code, e.Field, e.Msg)
		return
	}
	if fields, _ := objectFields(body); fields["url"] == nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "url",
			`url is required: the default webhook URL, or null (or "") to remove it`)
		return
	}
	url := ""
	if req.URL != nil {
		url = *req.URL
	}
	s, err := a.Service.SetWebhookURL(r.Context(), userID(r), url)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// getWebhookSecret answers the caller's signing secret, made on its first
// use.
func (a *api) getWebhookSecret(w http.ResponseWriter, r *http.Request) {
	s, err := jobs.GetWebhookSecret(r.Context(), a.Service.Pool(), userID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, s)
}

// rotateWebhookSecret replaces the caller's signing secret and answers the
// new one, which signs every delivery from now on.
func (a *api) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	s, err := jobs.RotateWebhookSecret(r.Context(), a.Service.Pool(), userID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, s)
}

// researchWebhooks answers the deliveries of a research and their
// attempts.
func (a *api) researchWebhooks(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	ds, err := jobs.WebhookDeliveries(r.Context(), a.Service.Pool(), userID(r), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if ds == nil {
		ds = []jobs.WebhookDelivery{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": ds})
}
