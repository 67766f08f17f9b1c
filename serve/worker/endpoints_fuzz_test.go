package worker

import "testing"

func FuzzDecodeEndpoints(f *testing.F) {
	for _, s := range []string{
		"apiVersion: plan/v1\nkind: Endpoints\nstages:\n  - stage: '*'\n    urls: [http://127.0.0.1:9]\n",
		`{"apiVersion":"plan/v1","kind":"Endpoints","stages":[{"stage":"a/*","model":"m","urls":["https://h:1/x"]}]}`,
		"kind: Endpoints\n", "- a\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		e, err := DecodeEndpoints("f.yaml", doc)
		if err != nil {
			return
		}
		if len(e.Stages) == 0 {
			t.Fatal("accepted a file without stages")
		}
		for _, s := range e.Stages {
			if len(s.URLs) == 0 || s.Stage == "" {
				t.Fatalf("accepted %+v", s)
			}
		}
	})
}
