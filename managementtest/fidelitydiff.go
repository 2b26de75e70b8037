package managementtest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// How the fidelity check compares an answer of the fake with the one the
// service gave: not the values (the fake has its own clock, tokens and
// page links) but what the answer is made of.

// compare reports how the fake's answer differs from the service's.
func (ck *check) compare(n int, name string, route Route, rec RecordedResponse, resp *http.Response, body []byte, staged string) {
	fake := func(s string) string {
		if staged != "" {
			return s + " (" + staged + ")"
		}
		return s
	}
	if rec.Status != resp.StatusCode {
		ck.differ(n, name, "status", strconv.Itoa(rec.Status), fake(strconv.Itoa(resp.StatusCode)))
		if route.is(listEndpoint) {
			ck.listEnded(rec)
		}
		return
	}
	var sv, fv any
	sJSON := decodeExact([]byte(rec.Body), &sv) == nil
	fJSON := decodeExact(body, &fv) == nil
	if rec.Status/100 != 2 {
		sShape, sReason := errorShape(rec.Body, sv, sJSON)
		fShape, fReason := errorShape(string(body), fv, fJSON)
		switch {
		case sShape != fShape:
			ck.differ(n, name, "error shape", sShape, fake(fShape))
			ck.retryAfter(n, name, rec.Header, resp.Header, fake)
			return
		case sReason != fReason:
			ck.differ(n, name, "reason", sReason, fake(fReason))
		}
	}
	if route.is(authenticateEndpoint) && rec.Status/100 == 2 {
		sValid, fValid := member(sv, "is_token_valid"), member(fv, "is_token_valid")
		if fmt.Sprint(sValid) != fmt.Sprint(fValid) {
			ck.differ(n, name, "verdict", "is_token_valid "+fmt.Sprint(sValid), fake("is_token_valid "+fmt.Sprint(fValid)))
			ck.retryAfter(n, name, rec.Header, resp.Header, fake)
			return
		}
	}
	if sJSON && fJSON {
		ck.fields(n, name, sv, fv, fake)
	}
	if route.is(listEndpoint) && rec.Status/100 == 2 {
		ck.nextPage(n, name, sv, fv, fake)
	}
	ck.retryAfter(n, name, rec.Header, resp.Header, fake)
}

// errorShape names the shape of an error body, and its reason (or error).
func errorShape(raw string, v any, isJSON bool) (shape, reason string) {
	switch {
	case strings.TrimSpace(raw) == "":
		return "empty", ""
	case !isJSON:
		return "not JSON", ""
	}
	obj, _ := v.(map[string]any)
	switch {
	case obj == nil:
		return "JSON, not an object", ""
	case obj["reason"] != nil:
		return "{reason, error_message}", fmt.Sprint(obj["reason"])
	case obj["error"] != nil:
		return "{error, error_description}", fmt.Sprint(obj["error"])
	}
	return "another JSON object", ""
}

// member is the member key of a JSON object v, nil when there is none.
func member(v any, key string) any {
	obj, _ := v.(map[string]any)
	return obj[key]
}

// fields reports the fields one answer has and the other has not, member
// by member: the items of two lists are paired by their id (id,
// physical_id, key or name), or by their place when they have none; the
// service's items the fake's list lacks are not compared, and the report
// says so (the seeding orders the fake's lists as the service's, ties
// included, so that a page holds the same items); custom_settings are
// data, not fields, and are not looked into.
func (ck *check) fields(n int, name string, sv, fv any, fake func(string) string) {
	unpaired := map[string]bool{} // the lists whose items went unpaired, noted once
	var walk func(s, f any, path string)
	walk = func(s, f any, path string) {
		switch sx := s.(type) {
		case map[string]any:
			fx, ok := f.(map[string]any)
			if !ok {
				return
			}
			for _, k := range slices.Sorted(maps.Keys(sx)) {
				p := join(path, k)
				if _, ok := fx[k]; !ok {
					ck.differ(n, name, "field "+p, "present", fake("absent"))
				} else if k != "custom_settings" {
					walk(sx[k], fx[k], p)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(fx)) {
				if _, ok := sx[k]; !ok {
					ck.differ(n, name, "field "+join(path, k), "absent", fake("present"))
				}
			}
		case []any:
			fx, ok := f.([]any)
			if !ok {
				return
			}
			missing := 0
			for i, item := range sx {
				if other, ok := pair(item, i, fx); ok {
					walk(item, other, path+"[]")
				} else {
					missing++
				}
			}
			if missing > 0 && !unpaired[path] {
				unpaired[path] = true
				ck.notCompared(fmt.Sprintf("#%d %s: %d of the service's %d items of %s are not in the fake's answer, and were not compared", n, name, missing, len(sx), path+"[]"))
			}
		}
	}
	walk(sv, fv, "")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// pair returns the item of list that stands for item, the i-th of its
// own list: the one with the same id, or the i-th when items have none.
func pair(item any, i int, list []any) (any, bool) {
	if id, key := identity(item); key != "" {
		for _, other := range list {
			if oid, okey := identity(other); okey == key && oid == id {
				return other, true
			}
		}
		return nil, false
	}
	if i < len(list) {
		return list[i], true
	}
	return nil, false
}

// identity returns the id of a list's item, and the member that holds it.
func identity(item any) (id, key string) {
	obj, _ := item.(map[string]any)
	for _, k := range []string{"id", "physical_id", "key", "name"} {
		if v, ok := obj[k].(string); ok {
			return v, k
		}
	}
	return "", ""
}

// nextPage compares whether each page links to a next one, and notes the
// fake's link for the request that follows the service's.
func (ck *check) nextPage(n int, name string, sv, fv any, fake func(string) string) {
	sLink, _ := member(sv, "next_page").(string)
	fLink, _ := member(fv, "next_page").(string)
	if sLink != "" {
		ck.links[sLink] = fLink
	}
	switch {
	case sLink != "" && fLink == "" && !ck.followed[sLink]:
		ck.notCompared(fmt.Sprintf("#%d %s: next_page, as the cassette did not follow the service's link (the fake holds only the items the cassette shows)", n, name))
	case (sLink == "") != (fLink == ""):
		ck.differ(n, name, "next_page", linkOrNull(sLink), fake(linkOrNull(fLink)))
	}
}

// listEnded notes that the fake has no page where the service's answer
// linked to one.
func (ck *check) listEnded(rec RecordedResponse) {
	var sv any
	if decodeExact([]byte(rec.Body), &sv) == nil {
		if l, _ := member(sv, "next_page").(string); l != "" {
			ck.links[l] = ""
		}
	}
}

func linkOrNull(link string) string {
	if link == "" {
		return "null"
	}
	return "a link"
}

// retryAfter compares whether a Retry-After came.
func (ck *check) retryAfter(n int, name string, s, f http.Header, fake func(string) string) {
	has := func(h http.Header) string {
		if h.Get("Retry-After") != "" {
			return "present"
		}
		return "absent"
	}
	if has(s) != has(f) {
		ck.differ(n, name, "Retry-After", has(s), fake(has(f)))
	}
}
