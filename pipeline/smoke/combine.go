package smoke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
)

// Combine joins the reports of two observers of the same image into one row per check.
//
// The rule: a row of primary that was skipped because its Target could not observe what
// the check needs (Result.Unobservable: an ErrUnsupported, or no root filesystem) takes
// secondary's result for that check, its detail prefixed with where ("in the engine, via
// service binding: ..."). Every other verdict of primary stands, whatever secondary says.
// When secondary could not observe it either, the row stays skipped and its detail gains
// secondary's reason. Checks only secondary ran are added at the end, prefixed likewise.
func Combine(primary, secondary Report, where string) Report {
	out := Report{Interrupted: primary.Interrupted, NotRun: primary.NotRun}
	if out.Interrupted == nil {
		out.Interrupted, out.NotRun = secondary.Interrupted, secondary.NotRun
	}
	seen := map[string]bool{}
	for _, p := range primary.Results {
		seen[p.Name] = true
		s, ok := secondary.Result(p.Name)
		switch {
		case !ok || p.Status != Skip || !p.Unobservable:
		case s.Status == Skip && s.Unobservable:
			p.Detail += "; " + where + ": " + s.Detail
		default:
			p = Result{Name: p.Name, Status: s.Status, Detail: where + ": " + s.Detail}
		}
		out.Results = append(out.Results, p)
	}
	for _, s := range secondary.Results {
		if !seen[s.Name] {
			s.Detail = where + ": " + s.Detail
			out.Results = append(out.Results, s)
		}
	}
	return out
}

// recorder is the Target Run hands to the checks: it notes whether the running check met
// a limit of the runtime (ErrUnsupported, or no root filesystem), so that Run can mark the
// check's skip as Unobservable without reading its detail.
type recorder struct {
	Target
	hit bool
}

func (r *recorder) note(err error) {
	if errors.Is(err, errors.ErrUnsupported) {
		r.hit = true
	}
}

func (r *recorder) Exec(ctx context.Context, argv ...string) ([]byte, []byte, int, error) {
	so, se, code, err := r.Target.Exec(ctx, argv...)
	r.note(err)
	return so, se, code, err
}

func (r *recorder) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	pc, err := r.Target.ListenPacket(ctx, network, address)
	r.note(err)
	return pc, err
}

func (r *recorder) RootFS() string {
	root := r.Target.RootFS()
	if root == "" {
		r.hit = true
	}
	return root
}

func (r *recorder) ProcStatus(ctx context.Context) ([]string, error) {
	s, err := r.Target.ProcStatus(ctx)
	r.note(err)
	return s, err
}

func (r *recorder) MountInfo(ctx context.Context) (string, error) {
	s, err := r.Target.MountInfo(ctx)
	r.note(err)
	return s, err
}

func (r *recorder) Logs() ([]byte, error) {
	b, err := r.Target.Logs()
	r.note(err)
	return b, err
}

// jsonReport is a Report as `ci smoke --json` prints it.
type jsonReport struct {
	Results []jsonResult `json:"results"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped int          `json:"skipped"`
	// Interrupted and NotRun: Report's, for a run stopped before its last check.
	Interrupted string   `json:"interrupted,omitempty"`
	NotRun      []string `json:"not_run,omitempty"`
}

type jsonResult struct {
	Name         string `json:"name"`
	Status       string `json:"status"` // PASS, FAIL or SKIP
	Detail       string `json:"detail"`
	Unobservable bool   `json:"unobservable,omitempty"`
}

// WriteJSON writes the report as one JSON object: {"results": [{"name", "status", "detail",
// "unobservable"}...], "passed", "failed", "skipped"}, and for an interrupted run
// "interrupted" (why) and "not_run" (the checks' names).
func (r Report) WriteJSON(w io.Writer) error {
	out := jsonReport{Results: []jsonResult{}, NotRun: r.NotRun}
	if r.Interrupted != nil {
		out.Interrupted = r.Interrupted.Error()
	}
	for _, res := range r.Results {
		out.Results = append(out.Results, jsonResult{res.Name, res.Status.String(), res.Detail, res.Unobservable})
		switch res.Status {
		case Pass:
			out.Passed++
		case Fail:
			out.Failed++
		default:
			out.Skipped++
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// ReadJSON parses what WriteJSON wrote. Anything else (no results, an unknown status,
// unknown fields) is an error: the report decides whether a tag moves.
func ReadJSON(data []byte) (Report, error) {
	var in jsonReport
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Report{}, fmt.Errorf("reading a smoke report: %w", err)
	}
	if len(in.Results) == 0 && in.Interrupted == "" {
		return Report{}, errors.New("reading a smoke report: it has no results")
	}
	var rep Report
	if in.Interrupted != "" {
		rep.Interrupted, rep.NotRun = errors.New(in.Interrupted), in.NotRun
	}
	for _, res := range in.Results {
		var st Status
		switch res.Status {
		case Pass.String():
			st = Pass
		case Fail.String():
			st = Fail
		case Skip.String():
			st = Skip
		default:
			return Report{}, fmt.Errorf("reading a smoke report: check %q has status %q", res.Name, res.Status)
		}
		if res.Unobservable && st != Skip {
			return Report{}, fmt.Errorf("reading a smoke report: check %q is %s and unobservable", res.Name, res.Status)
		}
		rep.Results = append(rep.Results, Result{Name: res.Name, Status: st, Detail: res.Detail, Unobservable: res.Unobservable})
	}
	return rep, nil
}
