package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/mcpgate/mcpgate/tools/db"
)

// A user id names the role a session runs as (Config.SetRole,
// Config.ConnectAsUser), and a user id is something an identity provider
// may let its users choose (Keycloak's preferred_username). So a role is
// used only when it passes a positive rule, checked at session start before
// the session runs any SQL of the user's:
//
//   - it exists and is a member of Config.UserRoleMemberOf, the role the
//     operator names for all user roles, and is not that role itself;
//   - it is not the DSN's login role, nor a member of it;
//   - it is not a superuser and has neither BYPASSRLS, CREATEROLE nor
//     REPLICATION;
//   - it is not a member (directly or through others, inherited or not:
//     pg_has_role's MEMBER) of any role that is one of those, nor of any
//     predefined role (pg_read_server_files, pg_write_server_files,
//     pg_execute_server_program, pg_read_all_data, pg_write_all_data,
//     pg_signal_backend, pg_database_owner, … — every name PostgreSQL
//     reserves with pg_).
//
// "none" and "public" are refused by name: SET ROLE "none" is a reset to the
// login role, and PostgreSQL reserves both.

// userRoleQuery reads what the rule needs about role $1, with $2 the group
// role and $3 the login role. Every name is qualified: at session start
// search_path is the role's default, which the role may set itself.
const userRoleQuery = `SELECT r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolreplication,
       COALESCE(pg_catalog.pg_has_role(r.oid, g.oid, 'MEMBER'), false),
       COALESCE((SELECT pg_catalog.string_agg(p.rolname::pg_catalog.text, ', ' ORDER BY p.rolname) FROM pg_catalog.pg_roles p
                 WHERE p.oid OPERATOR(pg_catalog.<>) r.oid AND pg_catalog.pg_has_role(r.oid, p.oid, 'MEMBER')
                   AND (p.rolsuper OR p.rolbypassrls OR p.rolcreaterole OR p.rolreplication
                        OR pg_catalog.starts_with(p.rolname::pg_catalog.text, 'pg_')
                        OR p.rolname::pg_catalog.text OPERATOR(pg_catalog.=) $3::pg_catalog.text)), '')
FROM pg_catalog.pg_roles r LEFT JOIN pg_catalog.pg_roles g ON g.rolname::pg_catalog.text OPERATOR(pg_catalog.=) $2::pg_catalog.text
WHERE r.rolname::pg_catalog.text OPERATOR(pg_catalog.=) $1::pg_catalog.text`

// refuseRole says why user's role is not used.
func refuseRole(cfg db.Config, user, why string) error {
	return fmt.Errorf("postgres: user %q cannot run as a database role of that name: %s; a user's role must be a plain role that is a member of %q (ask the operator)", user, why, cfg.UserRoleMemberOf)
}

// checkUserName applies the parts of the rule that need no database, so
// that with connect_as_user they hold before the worker logs in; login is
// the DSN's login role.
func checkUserName(cfg db.Config, user, login string) error {
	if err := checkRoleName(user); err != nil {
		return err
	}
	switch {
	case cfg.UserRoleMemberOf == "":
		return errors.New("postgres: no role is named that every user's role must be a member of (" + db.EnvUserRoleMemberOf + ", config database.user_role_member_of)")
	case user == "none" || user == "public" || strings.HasPrefix(user, "pg_"):
		return refuseRole(cfg, user, "PostgreSQL reserves the name")
	case user == login:
		return refuseRole(cfg, user, "it is the gateway's own login role")
	case user == cfg.UserRoleMemberOf:
		return refuseRole(cfg, user, "it is the role every user's role is a member of")
	}
	return nil
}

// checkUserRole applies the whole rule to user's role over c; login is the
// DSN's login role.
func checkUserRole(ctx context.Context, c *sql.Conn, cfg db.Config, user, login string) error {
	if err := checkUserName(cfg, user, login); err != nil {
		return err
	}
	refuse := func(why string) error { return refuseRole(cfg, user, why) }
	var super, bypass, createRole, replication, member bool
	var privileged string
	err := c.QueryRowContext(ctx, userRoleQuery, user, cfg.UserRoleMemberOf, login).Scan(&super, &bypass, &createRole, &replication, &member, &privileged)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return refuse("no such role exists")
	case err != nil:
		return fmt.Errorf("postgres: check the role of user %q: %w", user, err)
	case super:
		return refuse("the role is a superuser")
	case bypass:
		return refuse("the role has BYPASSRLS")
	case createRole:
		return refuse("the role has CREATEROLE")
	case replication:
		return refuse("the role has REPLICATION")
	case privileged != "":
		return refuse("the role is a member of privileged roles (" + clipRoles(privileged) + ")")
	case !member:
		return refuse(fmt.Sprintf("the role is not a member of %q", cfg.UserRoleMemberOf))
	}
	return nil
}

// clipRoles bounds a list of role names for an error message.
func clipRoles(s string) string {
	if len(s) > 256 {
		return s[:256] + "…"
	}
	return s
}

// dsnUser is the login role cfg's DSN names (pgx's default, the OS user,
// when it names none).
func dsnUser(dsn string) (string, error) {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", errors.New("postgres: the connection string does not parse (its value is not shown)")
	}
	return pc.User, nil
}
