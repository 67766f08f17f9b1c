package ppipe

import (
	"context"
	"os"
	"strconv"
	"testing"
)

func TestDebugCase(t *testing.T) {
	i, _ := strconv.Atoi(os.Getenv("CASE"))
	if os.Getenv("CASE") == "" {
		t.Skip()
	}
	c := benchCases[i]
	P := c.P
	if s := os.Getenv("P"); s != "" {
		P, _ = strconv.Atoi(s)
	}
	pl, err := Solve(context.Background(), c.inputs(), Options{MaxPartitions: P, TimeLimit: 40e9})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status %s obj %.2f bound %.2f gap %.4f%% options %s/%s", pl.Provenance.Status, pl.Provenance.Objective, pl.Provenance.Bound, pl.Provenance.Gap*100, pl.PPipe.Extra["options_kept"], pl.PPipe.Extra["options_raw"])
}
