package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/strandhq/strand/store"
)

type limitsInner struct {
	Queue string `json:"queue" max:"3"`
}

type limitsOuter struct {
	limitsEmbedded
	Items []limitsInner           `json:"items" max:"2"`
	Tags  map[string]string       `json:"tags" max:"2" maxkey:"2" maxvalue:"2"`
	Data  []byte                  `json:"data" max:"4"`
	Next  *limitsOuter            `json:"next"`
	Names []string                `json:"names" maxvalue:"1"`
	ByKey map[string]*limitsInner `json:"by_key"`
}

type limitsEmbedded struct {
	ID string `json:"id" max:"2"`
}

// TestCheckLimits: each tag, through embedding, slices, maps, pointers and
// a recursive type, with the field's path in the error.
func TestCheckLimits(t *testing.T) {
	ok := limitsOuter{limitsEmbedded{"ab"}, []limitsInner{{"abc"}}, map[string]string{"k": "v"}, []byte("data"), nil, []string{"x"}, nil}
	if err := store.CheckLimits(&ok); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v     limitsOuter
		field string
		sent  error
	}{
		{limitsOuter{limitsEmbedded: limitsEmbedded{"abc"}}, "id", store.ErrInvalidArgument},
		{limitsOuter{Items: make([]limitsInner, 3)}, "items", store.ErrInvalidArgument},
		{limitsOuter{Items: []limitsInner{{}, {"abcd"}}}, "items[1].queue", store.ErrInvalidArgument},
		{limitsOuter{Tags: map[string]string{"a": "", "b": "", "c": ""}}, "tags", store.ErrInvalidArgument},
		{limitsOuter{Tags: map[string]string{"abc": ""}}, "tags[abc]", store.ErrInvalidArgument},
		{limitsOuter{Tags: map[string]string{"a": "abc"}}, "tags[a]", store.ErrInvalidArgument},
		{limitsOuter{Data: []byte("12345")}, "data", store.ErrPayloadTooLarge},
		{limitsOuter{Next: &limitsOuter{Next: &limitsOuter{Data: []byte("12345")}}}, "next.next.data", store.ErrPayloadTooLarge},
		{limitsOuter{Names: []string{"a", "bc"}}, "names[1]", store.ErrInvalidArgument},
		{limitsOuter{ByKey: map[string]*limitsInner{"k": {strings.Repeat("q", 4)}}}, "by_key[k].queue", store.ErrInvalidArgument},
	} {
		err := store.CheckLimits(tc.v)
		var ia *store.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Field != tc.field || !errors.Is(err, tc.sent) {
			t.Errorf("%+v: %v, want field %s", tc.v, err, tc.field)
		}
	}
}

// TestCheckLimitsCountsCharacters: a string's limit counts characters, as
// JSON Schema's maxLength does, so a string of 4-byte characters within it
// passes (and is at most 4 bytes a character), and one beyond it does not.
func TestCheckLimitsCountsCharacters(t *testing.T) {
	wide := "𝕋" // 4 bytes of UTF-8
	if err := store.CheckLimits(limitsOuter{limitsEmbedded: limitsEmbedded{strings.Repeat(wide, 2)}, Tags: map[string]string{wide + wide: wide + wide}}); err != nil {
		t.Errorf("2 characters of 4 bytes under a limit of 2: %v", err)
	}
	for _, v := range []limitsOuter{
		{limitsEmbedded: limitsEmbedded{strings.Repeat(wide, 3)}},
		{Tags: map[string]string{strings.Repeat(wide, 3): ""}},
		{Tags: map[string]string{"k": strings.Repeat(wide, 3)}},
	} {
		if err := store.CheckLimits(v); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("3 characters under a limit of 2: %v", err)
		}
	}
}
