package conversefake

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// wireRequest is the body of a Converse request, as AWS documents it (the
// modelId is in the path).
type wireRequest struct {
	Messages        []wireMessage     `json:"messages"`
	System          []wireSystem      `json:"system"`
	InferenceConfig *wireInference    `json:"inferenceConfig"`
	ToolConfig      *wireToolConfig   `json:"toolConfig"`
	RequestMetadata map[string]string `json:"requestMetadata"`
	Additional      json.RawMessage   `json:"additionalModelRequestFields"`
	GuardrailConfig json.RawMessage   `json:"guardrailConfig"`
}

// knownFields are the request members of Converse; any other is refused.
var knownFields = []string{"messages", "system", "inferenceConfig", "toolConfig", "requestMetadata",
	"additionalModelRequestFields", "additionalModelResponseFieldPaths", "guardrailConfig", "promptVariables",
	"performanceConfig", "serviceTier", "outputConfig"}

type wireInference struct {
	MaxTokens     *int     `json:"maxTokens"`
	Temperature   *float64 `json:"temperature"`
	TopP          *float64 `json:"topP"`
	StopSequences []string `json:"stopSequences"`
}

type wireCachePoint struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

type wireSystem struct {
	Text         *string         `json:"text"`
	CachePoint   *wireCachePoint `json:"cachePoint"`
	GuardContent json.RawMessage `json:"guardContent"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a ContentBlock: a union, one member set.
type wireBlock struct {
	Text       *string         `json:"text,omitempty"`
	ToolUse    *wireToolUse    `json:"toolUse,omitempty"`
	ToolResult *wireToolResult `json:"toolResult,omitempty"`
	CachePoint *wireCachePoint `json:"cachePoint,omitempty"`
	Image      json.RawMessage `json:"image,omitempty"`
	Document   json.RawMessage `json:"document,omitempty"`
}

type wireToolUse struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type wireToolResult struct {
	ToolUseID string `json:"toolUseId"`
	Content   []struct {
		Text *string         `json:"text"`
		JSON json.RawMessage `json:"json"`
	} `json:"content"`
	Status string `json:"status,omitempty"`
}

type wireToolConfig struct {
	Tools []struct {
		ToolSpec *struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				JSON json.RawMessage `json:"json"`
			} `json:"inputSchema"`
		} `json:"toolSpec"`
		CachePoint *wireCachePoint `json:"cachePoint"`
	} `json:"tools"`
	ToolChoice *struct {
		Auto *struct{} `json:"auto"`
		Any  *struct{} `json:"any"`
		Tool *struct {
			Name string `json:"name"`
		} `json:"tool"`
	} `json:"toolChoice"`
}

// decode reads and checks the shape of a request body.
func decode(body []byte) (*wireRequest, *awsError) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, invalid("Malformed input request, please reformat your input and try again.")
	}
	for k := range top {
		if !slices.Contains(knownFields, k) {
			return nil, invalid("Malformed input request: extraneous key [%s] is not permitted, please reformat your input and try again.", k)
		}
	}
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return nil, invalid("Malformed input request: %s, please reformat your input and try again.", err)
	}
	return &w, nil
}

// check refuses what Converse refuses of a request to a model of spec.
func (w *wireRequest) check(spec ModelSpec) *awsError {
	if len(w.Messages) == 0 {
		return invalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	points := 0
	for i, s := range w.System {
		switch {
		case s.Text != nil && s.CachePoint == nil:
			if strings.TrimSpace(*s.Text) == "" {
				return invalid("The text field in the SystemContentBlock object at system.%d is blank. Add text to the text field, and try again.", i)
			}
		case s.CachePoint != nil && s.Text == nil:
			points++
		default:
			return invalid("SystemContentBlock at system.%d must have exactly one member set.", i)
		}
	}
	uses, err := w.checkMessages(&points)
	if err != nil {
		return err
	}
	if err := w.checkTools(spec, uses, &points); err != nil {
		return err
	}
	if points > 0 && spec.MinCacheTokens == 0 {
		return invalid("You invoked an unsupported model or your request did not allow prompt caching. See the documentation for more information.")
	}
	if points > 4 {
		return invalid("A maximum of 4 cache points are allowed per request; this request has %d.", points)
	}
	if ic := w.InferenceConfig; ic != nil && ic.MaxTokens != nil {
		if *ic.MaxTokens < 1 {
			return invalid("1 validation error detected: Value '%d' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1", *ic.MaxTokens)
		}
		if spec.MaxOutput > 0 && *ic.MaxTokens > spec.MaxOutput {
			return invalid("The maximum tokens you requested exceeds the model limit of %d. Try again with a maximum tokens value that is lower than %d.", spec.MaxOutput, spec.MaxOutput)
		}
	}
	return nil
}

// checkMessages checks the roles, their alternation and each block, and
// returns how many toolUse and toolResult blocks there are.
func (w *wireRequest) checkMessages(points *int) (int, *awsError) {
	uses := 0
	var pending []string // toolUse ids of the last assistant message
	for i, m := range w.Messages {
		switch {
		case m.Role != "user" && m.Role != "assistant":
			return 0, invalid("1 validation error detected: Value '%s' at 'messages.%d.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, i)
		case i == 0 && m.Role != "user":
			return 0, invalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		case i > 0 && m.Role == w.Messages[i-1].Role:
			return 0, invalid("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		case len(m.Content) == 0:
			return 0, invalid("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		var results, calls []string
		for j, b := range m.Content {
			if n := b.members(); n != 1 {
				return 0, invalid("ContentBlock at messages.%d.content.%d must have exactly one member set, not %d.", i, j, n)
			}
			switch {
			case b.Text != nil && strings.TrimSpace(*b.Text) == "":
				return 0, invalid("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, j)
			case b.CachePoint != nil:
				*points++
			case b.Image != nil || b.Document != nil:
				return 0, invalid("This fake server takes text, toolUse, toolResult and cachePoint blocks only.")
			case b.ToolUse != nil:
				if m.Role != "assistant" || b.ToolUse.ToolUseID == "" || b.ToolUse.Name == "" || !isObject(b.ToolUse.Input) {
					return 0, invalid("The toolUse block at messages.%d.content.%d must be in an assistant message, with a toolUseId, a name and an input object.", i, j)
				}
				calls, uses = append(calls, b.ToolUse.ToolUseID), uses+1
			case b.ToolResult != nil:
				if m.Role != "user" || !slices.Contains(pending, b.ToolResult.ToolUseID) {
					return 0, invalid("The toolResult block at messages.%d.content.%d does not answer a toolUse block of the previous assistant message.", i, j)
				}
				results, uses = append(results, b.ToolResult.ToolUseID), uses+1
			}
		}
		if m.Role == "user" {
			for _, id := range pending {
				if !slices.Contains(results, id) {
					return 0, invalid("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, id)
				}
			}
		}
		pending = calls
	}
	return uses, nil
}

// checkTools checks the toolConfig: required when the conversation holds
// tool blocks, each tool a named spec with a JSON object schema.
func (w *wireRequest) checkTools(spec ModelSpec, uses int, points *int) *awsError {
	tc := w.ToolConfig
	if tc == nil {
		if uses > 0 {
			return invalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
		}
		return nil
	}
	specs := 0
	for i, t := range tc.Tools {
		switch {
		case t.CachePoint != nil && t.ToolSpec == nil:
			if spec.NoToolCache {
				return invalid("The model doesn't support a cachePoint in toolConfig.tools (toolConfig.tools.%d): "+
					"place cache points in system or messages only.", i)
			}
			*points++
		case t.ToolSpec != nil && t.CachePoint == nil:
			specs++
			if !validName(t.ToolSpec.Name) || !isObject(t.ToolSpec.InputSchema.JSON) {
				return invalid("The tool at toolConfig.tools.%d needs a name matching [a-zA-Z0-9_-]{1,64} and an inputSchema json object.", i)
			}
		default:
			return invalid("Tool at toolConfig.tools.%d must have exactly one member set.", i)
		}
	}
	if specs == 0 {
		return invalid("The toolConfig field must hold at least one toolSpec.")
	}
	return tc.checkChoice(spec)
}

// checkChoice refuses a toolChoice the model does not take, or one that
// names no tool offered.
func (tc *wireToolConfig) checkChoice(spec ModelSpec) *awsError {
	c := tc.ToolChoice
	if c == nil {
		return nil
	}
	var set []string
	for _, m := range []struct {
		name string
		on   bool
	}{{ChoiceAuto, c.Auto != nil}, {ChoiceAny, c.Any != nil}, {ChoiceTool, c.Tool != nil}} {
		if m.on {
			set = append(set, m.name)
		}
	}
	if len(set) != 1 {
		return invalid("ToolChoice must have exactly one member set, not %d.", len(set))
	}
	takes := spec.ToolChoices
	if takes == nil {
		takes = []string{ChoiceAuto}
	}
	if !slices.Contains(takes, set[0]) {
		return invalid("This model doesn't support the toolConfig.toolChoice.%s field. Remove toolConfig.toolChoice.%s and try again.",
			set[0], set[0])
	}
	if c.Tool != nil && !tc.offers(c.Tool.Name) {
		return invalid("The tool %q named by toolConfig.toolChoice.tool is not in toolConfig.tools.", c.Tool.Name)
	}
	return nil
}

// offers reports whether a toolSpec of the config is named name.
func (tc *wireToolConfig) offers(name string) bool {
	for _, t := range tc.Tools {
		if t.ToolSpec != nil && t.ToolSpec.Name == name {
			return true
		}
	}
	return false
}

// members counts the members of a block that are set.
func (b wireBlock) members() int {
	n := 0
	for _, set := range []bool{b.Text != nil, b.ToolUse != nil, b.ToolResult != nil, b.CachePoint != nil,
		b.Image != nil, b.Document != nil} {
		if set {
			n++
		}
	}
	return n
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// toolResultText is the text of a toolResult's content.
func (r *wireToolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		switch {
		case c.Text != nil:
			parts = append(parts, *c.Text)
		case len(c.JSON) > 0:
			parts = append(parts, string(c.JSON))
		}
	}
	return strings.Join(parts, "\n")
}

// compactJSON is raw without insignificant spaces ("" when invalid).
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return ""
	}
	return b.String()
}
