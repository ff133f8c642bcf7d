package statemachine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/strandhq/strand/api"
)

// Versions. A definition is stored as a version per content: registering
// code whose definition equals a stored version's (the same SHA-1) reuses
// that version, be it the latest or an earlier one (code rolled back);
// only new content gets a new version number. The version new instances
// get (the "current" one) is the one the workers registered last, kept in
// a small stored record of its own (CurrentType) when it is not simply
// the latest version.

// CurrentType is the stored definition type of the record that names a
// state machine type's current version, when it is not the latest.
func CurrentType(typ string) string { return "sm.current/" + typ }

// currentRecord is the body of a CurrentType record.
type currentRecord struct {
	Version int32 `json:"version"`
}

// storeDefinition stores d's content as a version of its type, reusing a
// stored version with the same content, and makes it the current one. It
// returns the version.
func storeDefinition(ctx context.Context, svc Service, d *Definition) (int32, error) {
	typ := DefinitionType(d.Type)
	body := d.serialized()
	sha := api.Definition{Body: body}.BodySHA1()
	all, err := svc.ListDefinitions(ctx, typ)
	if err != nil {
		return 0, fmt.Errorf("statemachine: read the stored versions of %s: %w", d.Type, err)
	}
	var version, latest int32
	for _, v := range all {
		if v.Type != typ {
			continue
		}
		if v.SHA1 == sha && v.Version > version {
			version = v.Version
		}
		latest = max(latest, v.Version)
	}
	if version == 0 {
		got, err := svc.PutDefinition(ctx, api.Definition{Type: typ, Body: body, ModifiedBy: hostID()})
		if err != nil {
			return 0, fmt.Errorf("statemachine: store definition %s: %w", d.Type, err)
		}
		version, latest = got.Version, max(latest, got.Version)
	}
	cur, err := currentVersion(ctx, svc, d.Type)
	if err != nil {
		return 0, err
	}
	if cur == version || cur == 0 && version == latest {
		return version, nil // current already
	}
	rec, _ := json.Marshal(currentRecord{Version: version})
	if _, err := svc.PutDefinition(ctx, api.Definition{Type: CurrentType(d.Type), Body: rec, ModifiedBy: hostID()}); err != nil {
		return 0, fmt.Errorf("statemachine: make version %d of %s the current one: %w", version, d.Type, err)
	}
	return version, nil
}

// currentVersion is the version of typ new instances get: the one its
// current record names, or 0 (the latest) when there is none.
func currentVersion(ctx context.Context, svc Service, typ string) (int32, error) {
	d, err := svc.GetDefinition(ctx, CurrentType(typ), 0)
	if errors.Is(err, api.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("statemachine: read the current version of %s: %w", typ, err)
	}
	var rec currentRecord
	if err := json.Unmarshal(d.Body, &rec); err != nil || rec.Version < 0 {
		return 0, nil // not one this package wrote: the latest
	}
	return rec.Version, nil
}

// getDefinition reads a stored version of typ; version 0 is the current
// one.
func getDefinition(ctx context.Context, svc Service, typ string, version int32) (api.Definition, error) {
	if version == 0 {
		v, err := currentVersion(ctx, svc, typ)
		if err != nil {
			return api.Definition{}, err
		}
		version = v
	}
	return svc.GetDefinition(ctx, DefinitionType(typ), version)
}
