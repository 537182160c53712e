package options_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mcpgate/mcpgate/options"
)

func TestErrorsFindsEveryFieldThroughWrapsAndJoins(t *testing.T) {
	var p options.Problems
	if p.Err("x") != nil {
		t.Fatal("got an error from no problems, want nil")
	}
	p.Add("MaxBodyBytes", "%d is negative", -1)
	p.Add("DB.MaxPerUser", "is more than DB.Max")
	err := fmt.Errorf("wrapped: %w", errors.Join(p.Err("gateway"), errors.New("other")))
	got := options.Errors(err)
	if len(got) != 2 || got[0].Field != "MaxBodyBytes" || got[1].Field != "DB.MaxPerUser" {
		t.Fatalf("got %v, want the two fields in order", got)
	}
	if want := "gateway: MaxBodyBytes: -1 is negative\nDB.MaxPerUser: is more than DB.Max"; p.Err("gateway").Error() != want {
		t.Errorf("got %q, want %q", p.Err("gateway").Error(), want)
	}
}
