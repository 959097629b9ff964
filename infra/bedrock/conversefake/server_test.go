package conversefake_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithy "github.com/aws/smithy-go"

	"github.com/gbresearch/gb/infra/bedrock/conversefake"
)

const model = "amazon.nova-lite-v1:0"

func client(f *conversefake.Server, secret string) *bedrockruntime.Client {
	c := f.Config()
	return bedrockruntime.New(bedrockruntime.Options{Region: c.Region, BaseEndpoint: aws.String(f.URL()),
		Retryer:     aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, secret, "")})
}

func text(s string) types.ContentBlock { return &types.ContentBlockMemberText{Value: s} }

// An unsigned request is refused as Bedrock refuses it: a 403 whose type
// is in X-Amzn-ErrorType and whose message is in a JSON body.
func TestUnsignedRequestsAreRefused(t *testing.T) {
	t.Parallel()
	f := conversefake.New(conversefake.Config{})
	defer f.Close()
	resp, err := http.Post(f.URL()+"/model/"+model+"/converse", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Amzn-ErrorType"), conversefake.TypeMissingAuthToken+":") ||
		!strings.Contains(string(body), `"message":`) {
		t.Errorf("%d %q %s", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), body)
	}
}

// Through the SDK: a signature made with another secret is refused, a
// well-signed request is answered, and what Converse refuses of a
// conversation is a ValidationException.
func TestSignaturesAndValidation(t *testing.T) {
	t.Parallel()
	f := conversefake.New(conversefake.Config{})
	defer f.Close()
	ctx := context.Background()
	good, bad := client(f, f.Config().SecretAccessKey), client(f, "not-the-secret")
	hello := &bedrockruntime.ConverseInput{ModelId: aws.String(model),
		Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{text("hi")}}}}
	if _, err := bad.Converse(ctx, hello); code(err) != conversefake.TypeBadSignature {
		t.Errorf("another secret: %v", err)
	}
	out, err := good.Converse(ctx, hello)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != types.StopReasonEndTurn || *out.Usage.InputTokens == 0 {
		t.Errorf("answer %+v", out)
	}
	use := &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String("t1"), Name: aws.String("search"),
		Input: document.NewLazyDocument(map[string]any{})}}
	for name, msgs := range map[string][]types.Message{
		"starts with the assistant": {{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{text("hi")}}},
		"does not alternate": {{Role: types.ConversationRoleUser, Content: []types.ContentBlock{text("a")}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{text("b")}}},
		"blank text": {{Role: types.ConversationRoleUser, Content: []types.ContentBlock{text(" ")}}},
		"toolUse without toolConfig": {{Role: types.ConversationRoleUser, Content: []types.ContentBlock{text("a")}},
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{use}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberToolResult{
				Value: types.ToolResultBlock{ToolUseId: aws.String("t1"), Content: []types.ToolResultContentBlock{
					&types.ToolResultContentBlockMemberText{Value: "r"}}}}}}},
		"toolUse without its result": {{Role: types.ConversationRoleUser, Content: []types.ContentBlock{text("a")}},
			{Role: types.ConversationRoleAssistant, Content: []types.ContentBlock{use}},
			{Role: types.ConversationRoleUser, Content: []types.ContentBlock{text("b")}}},
	} {
		_, err := good.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(model), Messages: msgs})
		if code(err) != conversefake.TypeValidation {
			t.Errorf("%s: %v, want a ValidationException", name, err)
		}
	}
	if st := f.Stats(); st.Billed != 1 || st.Unauthorized != 1 || st.BadRequests != 5 {
		t.Errorf("stats %+v", st)
	}
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
