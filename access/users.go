package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/store"
)

// Record kinds in the store.
const (
	userKind  = "user"
	tokenKind = "token"
)

// User is a person or a service account, as the API shows it: never its
// password.
type User struct {
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
	Kind  Kind   `json:"kind"`
	// ClusterAdmin manages namespaces, users and nodes, and holds every
	// role in every namespace.
	ClusterAdmin bool `json:"cluster_admin,omitempty"`
	// Grants are the roles held per namespace.
	Grants map[string][]Role `json:"grants,omitempty"`
	// Groups are the groups the user is in: who human tasks are for.
	Groups    []string  `json:"groups,omitempty"`
	Disabled  bool      `json:"disabled,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// storedUser is a user's record: the user and its password's bcrypt hash.
type storedUser struct {
	User
	PasswordHash string `json:"password_hash,omitempty"`
	// LoginUnlockedAt is when a cluster admin last lifted the lock of
	// failed logins on the name: a node that locked it before lets it in.
	LoginUnlockedAt time.Time `json:"login_unlocked_at,omitzero"`
}

// identity returns whom u's requests come from.
func (u User) identity(tokenID string) Identity {
	return Identity{Name: u.Name, Kind: u.Kind, ClusterAdmin: u.ClusterAdmin, Grants: u.Grants, Groups: u.Groups, TokenID: tokenID}
}

// Token is an API token as the API shows it: never its secret.
type Token struct {
	// ID is the token's public part: "strand_ID_SECRET" is the token.
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Name      string    `json:"name,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when the token stops being accepted (zero: never).
	ExpiresAt  time.Time `json:"expires_at,omitzero"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
	// Session marks a token the console's login made (kept in a cookie).
	Session bool `json:"session,omitempty"`
}

// storedToken is a token's record: the token and its secret's SHA-256.
type storedToken struct {
	Token
	Hash string `json:"hash"`
	// FromLogin marks a token a login made (a session cookie, or the token
	// strand login keeps): a change of the password revokes it.
	FromLogin bool `json:"from_login,omitempty"`
}

// TokenPrefix starts every API token.
const TokenPrefix = "strand_"

// Passwords are bcrypt's: at most 72 bytes, which bcrypt reads; and we ask
// for at least 8 characters (as the API document and the console count).
const (
	MinPassword = 8
	MaxPassword = 72
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// Service manages users, tokens and grants in a store, and authenticates
// the tokens and passwords requests come with.
type Service struct {
	st  store.MetadataStore
	now func() time.Time
	// cost is bcrypt's; tests lower it.
	cost int
	// seen remembers authenticated tokens for a few seconds, so that a
	// request costs no store read (see authenticate.go).
	seen *tokenCache
	// limits count failed logins (see LoginLimits).
	limits *limiter
	// dummy is the hash a login without a password to compare compares
	// against (see dummyHash).
	dummyOnce sync.Once
	dummy     []byte
}

// Options configure a Service.
type Options struct {
	// TokenCacheTTL is how long an authenticated token is believed without
	// reading the store again (default 5s): a token revoked on another
	// node is refused here within it; one revoked on this node at once.
	TokenCacheTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// BcryptCost is bcrypt's cost (default bcrypt.DefaultCost).
	BcryptCost int
	// LoginLimits bound failed logins per name and per address.
	LoginLimits LoginLimits
}

// New returns the access service of st.
func New(st store.MetadataStore, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TokenCacheTTL <= 0 {
		opts.TokenCacheTTL = 5 * time.Second
	}
	if opts.BcryptCost == 0 {
		opts.BcryptCost = bcrypt.DefaultCost
	}
	return &Service{st: st, now: opts.Now, cost: opts.BcryptCost, seen: newTokenCache(opts.TokenCacheTTL, opts.Now),
		limits: newLimiter(opts.LoginLimits, opts.Now)}
}

// NewUser is the argument of CreateUser.
type NewUser struct {
	Name  string `json:"name" required:"true" max:"128" pattern:"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$"`
	Email string `json:"email,omitempty" max:"256" pattern:"^$|@"`
	// Kind is user (default) or service; a service account has no
	// password and calls with tokens only.
	Kind         Kind   `json:"kind,omitempty" enum:",user,service"`
	Password     string `json:"password,omitempty" max:"72" example:"correct-horse-battery"`
	ClusterAdmin bool   `json:"cluster_admin,omitempty"`
	// Groups are the groups the user is in.
	Groups []string `json:"groups,omitempty" max:"100" maxvalue:"128" itempattern:"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$" unique:"true"`
}

// CreateUser creates a user or service account; api.ErrAlreadyExists if
// the name is taken.
func (s *Service) CreateUser(ctx context.Context, nu NewUser) (User, error) {
	if nu.Kind == "" {
		nu.Kind = KindUser
	}
	if err := checkName(nu.Name); err != nil {
		return User{}, err
	}
	if nu.Email != "" && (!strings.Contains(nu.Email, "@") || len(nu.Email) > 256) {
		return User{}, api.InvalidArgument("email", "%q is not an email address", nu.Email)
	}
	if err := checkGroups(nu.Groups); err != nil {
		return User{}, err
	}
	su := storedUser{User: User{Name: nu.Name, Email: nu.Email, Kind: nu.Kind, ClusterAdmin: nu.ClusterAdmin, Groups: nu.Groups, CreatedAt: s.now().UTC()}}
	switch nu.Kind {
	case KindUser:
		hash, err := s.hash(nu.Password)
		if err != nil {
			return User{}, err
		}
		su.PasswordHash = hash
	case KindService:
		if nu.Password != "" {
			return User{}, api.InvalidArgument("password", "a service account has no password: it calls with tokens")
		}
	default:
		return User{}, api.InvalidArgument("kind", "want user or service, got %q", nu.Kind)
	}
	if _, err := s.st.PutRecord(ctx, store.Record{Kind: userKind, Key: su.Name, Value: mustJSON(su)}); err != nil {
		if errors.Is(err, store.ErrConditionFailed) {
			return User{}, fmt.Errorf("%w: user %q", api.ErrAlreadyExists, su.Name)
		}
		return User{}, fmt.Errorf("access: create user %q: %w", su.Name, err)
	}
	return su.User, nil
}

func checkName(name string) error {
	if !namePattern.MatchString(name) {
		return api.InvalidArgument("name", "%q: want 1 to 128 letters, digits and . _ @ -, starting with a letter or digit", name)
	}
	return nil
}

// checkPassword checks a new password of the field named field: at least
// MinPassword characters, at most MaxPassword bytes.
func checkPassword(field, password string) error {
	if n := utf8.RuneCountInString(password); n < MinPassword || len(password) > MaxPassword {
		return api.InvalidArgument(field, "want at least %d characters and at most %d bytes, got %d characters in %d bytes",
			MinPassword, MaxPassword, n, len(password))
	}
	return nil
}

func (s *Service) hash(password string) (string, error) {
	if err := checkPassword("password", password); err != nil {
		return "", err
	}
	b, err := bcrypt.GenerateFromPassword([]byte(password), s.cost)
	if err != nil {
		return "", fmt.Errorf("access: hash password: %w", err)
	}
	return string(b), nil
}

// getUser reads a user's record.
func (s *Service) getUser(ctx context.Context, name string) (storedUser, int64, error) {
	rec, err := s.st.GetRecord(ctx, userKind, name)
	if errors.Is(err, store.ErrNotFound) {
		return storedUser{}, 0, fmt.Errorf("%w: no user %q", api.ErrNotFound, name)
	}
	if err != nil {
		return storedUser{}, 0, fmt.Errorf("access: read user %q: %w", name, err)
	}
	var su storedUser
	if err := json.Unmarshal(rec.Value, &su); err != nil {
		return storedUser{}, 0, fmt.Errorf("access: decode user %q: %w", name, err)
	}
	return su, rec.Version, nil
}

// GetUser returns a user; api.ErrNotFound if there is none of that name.
func (s *Service) GetUser(ctx context.Context, name string) (User, error) {
	su, _, err := s.getUser(ctx, name)
	return su.User, err
}

// ListUsers returns every user and service account by name.
func (s *Service) ListUsers(ctx context.Context) ([]User, error) {
	recs, err := s.st.ListRecords(ctx, userKind, "")
	if err != nil {
		return nil, fmt.Errorf("access: list users: %w", err)
	}
	out := make([]User, 0, len(recs))
	for _, rec := range recs {
		var su storedUser
		if err := json.Unmarshal(rec.Value, &su); err != nil {
			return nil, fmt.Errorf("access: decode user %q: %w", rec.Key, err)
		}
		out = append(out, su.User)
	}
	return out, nil
}

// HasUsers reports whether any user or service account exists: a server
// without one runs open on loopback.
func (s *Service) HasUsers(ctx context.Context) (bool, error) {
	users, err := s.ListUsers(ctx)
	return len(users) > 0, err
}

// updateUser applies change to a user's record, again if another writer
// came first.
func (s *Service) updateUser(ctx context.Context, name string, change func(*storedUser) error) (User, error) {
	for {
		su, version, err := s.getUser(ctx, name)
		if err != nil {
			return User{}, err
		}
		if err := change(&su); err != nil {
			return User{}, err
		}
		_, err = s.st.PutRecord(ctx, store.Record{Kind: userKind, Key: name, Value: mustJSON(su), Version: version})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return User{}, fmt.Errorf("access: update user %q: %w", name, err)
		}
		s.seen.forgetUser(name)
		return su.User, nil
	}
}

// SetPassword replaces a user's password and ends their login sessions
// (the console's sessions and the tokens strand login made; not the API
// tokens made with strand token create): all but the token keep ("" for
// none), which a user changing their own password keeps. It returns how
// many sessions it ended.
func (s *Service) SetPassword(ctx context.Context, name, password, keep string) (ended int, err error) {
	hash, err := s.hash(password)
	if err != nil {
		return 0, err
	}
	_, err = s.updateUser(ctx, name, func(su *storedUser) error {
		if su.Kind != KindUser {
			return api.InvalidArgument("name", "%q is a service account: it has no password", name)
		}
		su.PasswordHash = hash
		return nil
	})
	if err != nil {
		return 0, err
	}
	return s.EndSessions(ctx, name, keep)
}

// PasswordChange is a user's change of their own password.
type PasswordChange struct {
	// Name is the user's.
	Name string
	// Current is the password now; New replaces it.
	Current, New string
	// Address is the remote address the change came from: a wrong
	// current password counts as a failed login of the name from it.
	Address string
	// Keep is the token the change came with: the one session kept.
	Keep string
}

// ChangePassword changes a user's own password, given the current one, and
// ends their other login sessions (see SetPassword); it returns how many
// it ended. A wrong current password is api.ErrInvalidArgument, counts as
// a failed login (see LoginLimits) and changes nothing; a name that failed
// too often is refused with a *LoginThrottledError.
func (s *Service) ChangePassword(ctx context.Context, c PasswordChange) (int, error) {
	if err := checkPassword("new_password", c.New); err != nil {
		return 0, err
	}
	if c.New == c.Current {
		return 0, api.InvalidArgument("new_password", "the same as the current one")
	}
	done, err := s.beginAttempt(ctx, c.Name, c.Address)
	if err != nil {
		return 0, err
	}
	su, err := s.checkPassword(ctx, c.Name, c.Current)
	if err != nil {
		if !errors.Is(err, api.ErrUnauthenticated) {
			done(true)
			return 0, err
		}
		if locked := done(false); locked != nil {
			return 0, locked
		}
		return 0, api.InvalidArgument("current_password", "not your password")
	}
	done(true)
	if su.Kind != KindUser {
		return 0, api.InvalidArgument("name", "%q is a service account: it has no password", c.Name)
	}
	return s.SetPassword(ctx, c.Name, c.New, c.Keep)
}

// EndSessions revokes a user's login sessions (tokens a login made), all
// but the token keep; it returns how many it revoked.
func (s *Service) EndSessions(ctx context.Context, name, keep string) (int, error) {
	recs, err := s.st.ListRecords(ctx, tokenKind, "")
	if err != nil {
		return 0, fmt.Errorf("access: list the sessions of %q: %w", name, err)
	}
	ended := 0
	for _, rec := range recs {
		var st storedToken
		if err := json.Unmarshal(rec.Value, &st); err != nil {
			return ended, fmt.Errorf("access: decode token %q: %w", rec.Key, err)
		}
		expired := !st.ExpiresAt.IsZero() && !s.now().Before(st.ExpiresAt)
		if st.User != name || st.ID == keep || !st.RevokedAt.IsZero() || expired || !st.fromLogin() {
			continue
		}
		if err := s.RevokeToken(ctx, st.ID); err != nil && !isNotFound(err) {
			return ended, fmt.Errorf("access: end a session of %q: %w", name, err)
		}
		ended++
	}
	return ended, nil
}

// fromLogin reports whether a login made the token; tokens made before
// logins were marked are told by the name the server gives them.
func (st storedToken) fromLogin() bool {
	return st.FromLogin || st.Session || strings.HasPrefix(st.Name, "login from ")
}

// SetClusterAdmin makes a user a cluster admin, or not.
func (s *Service) SetClusterAdmin(ctx context.Context, name string, admin bool) (User, error) {
	return s.updateUser(ctx, name, func(su *storedUser) error {
		su.ClusterAdmin = admin
		return nil
	})
}

// SetGroups sets the groups a user is in (none: empty).
func (s *Service) SetGroups(ctx context.Context, name string, groups []string) (User, error) {
	if err := checkGroups(groups); err != nil {
		return User{}, err
	}
	return s.updateUser(ctx, name, func(su *storedUser) error {
		su.Groups = slices.Clone(groups)
		return nil
	})
}

// SetEmail sets a user's email address (empty: none): where the alert
// groups naming the user email them.
func (s *Service) SetEmail(ctx context.Context, name, email string) (User, error) {
	if email != "" && (!strings.Contains(email, "@") || len(email) > 256) {
		return User{}, api.InvalidArgument("email", "%q is not an email address", email)
	}
	return s.updateUser(ctx, name, func(su *storedUser) error {
		su.Email = email
		return nil
	})
}

// checkGroups checks group names: a name as users have, each once.
func checkGroups(groups []string) error {
	for i, g := range groups {
		if !namePattern.MatchString(g) {
			return api.InvalidArgument(fmt.Sprintf("groups[%d]", i), "%q: want 1 to 128 letters, digits, '.', '_', '-' or '@'", g)
		}
		if slices.Contains(groups[:i], g) {
			return api.InvalidArgument(fmt.Sprintf("groups[%d]", i), "%q twice", g)
		}
	}
	return nil
}

// SetDisabled disables a user (who is then refused, tokens and password
// alike) or enables them again.
func (s *Service) SetDisabled(ctx context.Context, name string, disabled bool) (User, error) {
	return s.updateUser(ctx, name, func(su *storedUser) error {
		su.Disabled = disabled
		return nil
	})
}

// Grant sets the roles a user holds in a namespace; no roles removes the
// grant.
func (s *Service) Grant(ctx context.Context, name, namespace string, roles ...Role) (User, error) {
	if namespace == "" {
		return User{}, api.InvalidArgument("namespace", "empty")
	}
	for _, r := range roles {
		if _, err := ParseRole(string(r)); err != nil {
			return User{}, api.InvalidArgument("roles", "%v", err)
		}
	}
	return s.updateUser(ctx, name, func(su *storedUser) error {
		if len(roles) == 0 {
			delete(su.Grants, namespace)
			return nil
		}
		if su.Grants == nil {
			su.Grants = map[string][]Role{}
		}
		held := slices.Clone(roles)
		sort.Slice(held, func(i, j int) bool { return slices.Index(Roles, held[i]) < slices.Index(Roles, held[j]) })
		su.Grants[namespace] = slices.Compact(held)
		return nil
	})
}

// DeleteUser removes a user and revokes their tokens.
func (s *Service) DeleteUser(ctx context.Context, name string) error {
	tokens, err := s.ListTokens(ctx, name)
	if err != nil {
		return err
	}
	for _, t := range tokens {
		if t.RevokedAt.IsZero() {
			if err := s.RevokeToken(ctx, t.ID); err != nil && !errors.Is(err, api.ErrNotFound) {
				return err
			}
		}
	}
	if err := s.st.DeleteRecord(ctx, userKind, name, 0); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: no user %q", api.ErrNotFound, name)
		}
		return fmt.Errorf("access: delete user %q: %w", name, err)
	}
	s.seen.forgetUser(name)
	return nil
}

// NewToken is the argument of CreateToken.
type NewToken struct {
	User string `json:"user" required:"true" max:"128"`
	Name string `json:"name,omitempty" max:"256"`
	// TTL is how long the token is accepted (0: until revoked).
	TTL     time.Duration `json:"ttl,omitempty" minimum:"0" maximum:"31536000000000000"`
	Session bool          `json:"-"`
	// Login marks a token a login makes: a change of the password
	// revokes it (and a session, which is one too).
	Login bool `json:"-"`
}

// CreateToken makes an API token for a user. The token itself ("strand_…")
// is returned once and never stored: the store keeps its SHA-256.
func (s *Service) CreateToken(ctx context.Context, nt NewToken) (secret string, t Token, err error) {
	if nt.TTL < 0 {
		return "", Token{}, api.InvalidArgument("ttl", "negative")
	}
	if len(nt.Name) > 256 {
		return "", Token{}, api.InvalidArgument("name", "longer than 256 bytes")
	}
	u, _, err := s.getUser(ctx, nt.User)
	if err != nil {
		return "", Token{}, err
	}
	if u.Disabled {
		return "", Token{}, fmt.Errorf("%w: user %q is disabled", api.ErrFailedPrecondition, nt.User)
	}
	idBytes, secretBytes := make([]byte, 8), make([]byte, 32)
	rand.Read(idBytes)
	rand.Read(secretBytes)
	now := s.now().UTC()
	st := storedToken{Token: Token{ID: hex.EncodeToString(idBytes), User: nt.User, Name: nt.Name, CreatedAt: now, Session: nt.Session},
		FromLogin: nt.Login || nt.Session}
	if nt.TTL > 0 {
		st.ExpiresAt = now.Add(nt.TTL)
	}
	sum := sha256.Sum256(secretBytes)
	st.Hash = hex.EncodeToString(sum[:])
	if _, err := s.st.PutRecord(ctx, store.Record{Kind: tokenKind, Key: st.ID, Value: mustJSON(st)}); err != nil {
		return "", Token{}, fmt.Errorf("access: create token for %q: %w", nt.User, err)
	}
	return TokenPrefix + st.ID + "_" + hex.EncodeToString(secretBytes), st.Token, nil
}

func (s *Service) getToken(ctx context.Context, id string) (storedToken, int64, error) {
	rec, err := s.st.GetRecord(ctx, tokenKind, id)
	if errors.Is(err, store.ErrNotFound) {
		return storedToken{}, 0, fmt.Errorf("%w: no token %q", api.ErrNotFound, id)
	}
	if err != nil {
		return storedToken{}, 0, fmt.Errorf("access: read token %q: %w", id, err)
	}
	var st storedToken
	if err := json.Unmarshal(rec.Value, &st); err != nil {
		return storedToken{}, 0, fmt.Errorf("access: decode token %q: %w", id, err)
	}
	return st, rec.Version, nil
}

// ListTokens returns a user's tokens, or every user's for "", by id.
func (s *Service) ListTokens(ctx context.Context, user string) ([]Token, error) {
	recs, err := s.st.ListRecords(ctx, tokenKind, "")
	if err != nil {
		return nil, fmt.Errorf("access: list tokens: %w", err)
	}
	out := []Token{}
	for _, rec := range recs {
		var st storedToken
		if err := json.Unmarshal(rec.Value, &st); err != nil {
			return nil, fmt.Errorf("access: decode token %q: %w", rec.Key, err)
		}
		if user == "" || st.User == user {
			out = append(out, st.Token)
		}
	}
	return out, nil
}

// GetToken returns a token by id.
func (s *Service) GetToken(ctx context.Context, id string) (Token, error) {
	st, _, err := s.getToken(ctx, id)
	return st.Token, err
}

// RevokeToken stops a token being accepted: at once on this node, within
// the token cache's TTL on the others. The token stays listed as revoked.
func (s *Service) RevokeToken(ctx context.Context, id string) error {
	_, err := s.updateToken(ctx, id, func(st *storedToken) bool {
		if !st.RevokedAt.IsZero() {
			return false
		}
		st.RevokedAt = s.now().UTC()
		return true
	})
	s.seen.forget(id)
	return err
}

// updateToken applies change to a token's record unless it reports no
// change, again if another writer came first.
func (s *Service) updateToken(ctx context.Context, id string, change func(*storedToken) bool) (Token, error) {
	for {
		st, version, err := s.getToken(ctx, id)
		if err != nil {
			return Token{}, err
		}
		if !change(&st) {
			return st.Token, nil
		}
		_, err = s.st.PutRecord(ctx, store.Record{Kind: tokenKind, Key: id, Value: mustJSON(st), Version: version})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return Token{}, fmt.Errorf("access: update token %q: %w", id, err)
		}
		return st.Token, nil
	}
}

// splitToken returns a token's id and secret.
func splitToken(raw string) (id string, secret []byte, ok bool) {
	rest, ok := strings.CutPrefix(raw, TokenPrefix)
	if !ok {
		return "", nil, false
	}
	id, hexSecret, ok := strings.Cut(rest, "_")
	if !ok || len(id) != 16 || len(hexSecret) != 64 {
		return "", nil, false
	}
	secret, err := hex.DecodeString(hexSecret)
	if err != nil {
		return "", nil, false
	}
	return id, secret, true
}

// matches reports whether secret is the token's, in constant time.
func (st storedToken) matches(secret []byte) bool {
	sum := sha256.Sum256(secret)
	want, err := hex.DecodeString(st.Hash)
	return err == nil && subtle.ConstantTimeCompare(sum[:], want) == 1
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("access: encode %T: %v", v, err))
	}
	return b
}
