/* Unit tests for the security properties docs/SECURITY.md claims that no other
 * module test pins down: a database is opened with an untrusted schema
 * (no hand-written schema, no side-effect functions from triggers/views), and
 * profile names from a suite cannot leave suites/targets or suites/models. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "model.h"
#include "store.h"
#include "store_internal.h"
#include "target.h"

static const char *suites_dir(void)
{
    static char dir[4096];
    const char *src = getenv("PPB_SOURCE_DIR");
    snprintf(dir, sizeof dir, "%s/suites", src ? src : PPB_SOURCE_DIR);
    return dir;
}

static void test_store_schema_is_untrusted(void **state)
{
    (void)state;
    char dir[] = "/tmp/ppb-security-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[300];
    snprintf(path, sizeof path, "%s/r.db", dir);
    ppb_store *s = NULL;
    ppb_err err = {{0}};
    assert_int_equal(ppb_store_open(&s, path, &err), 0);
    sqlite3 *db = ppb_store_db(s);
    int trusted = -1, defensive = -1;
    assert_int_equal(sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, -1, &trusted), SQLITE_OK);
    assert_int_equal(sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, -1, &defensive), SQLITE_OK);
    assert_int_equal(trusted, 0);
    assert_int_equal(defensive, 1);
    /* Defensive mode: the schema cannot be rewritten by hand, even when asked. */
    sqlite3_exec(db, "PRAGMA writable_schema = ON", NULL, NULL, NULL);
    assert_int_not_equal(sqlite3_exec(db, "UPDATE sqlite_master SET sql = 'x' WHERE name = 'runs'",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
    ppb_store_close(s);
    /* Still a good database afterwards. */
    assert_int_equal(ppb_store_open(&s, path, &err), 0);
    ppb_store_close(s);
    snprintf(path, sizeof path, "%s/r.db-wal", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/r.db-shm", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/r.db", dir);
    unlink(path);
    rmdir(dir);
}

/* A database from elsewhere with an object ppbench never makes (a view over a
 * huge query in place of a table, a trigger, an extra index) is refused when
 * opened, before anything reads through it, and left as it was. */
static void test_foreign_schema_objects_are_refused(void **state)
{
    (void)state;
    const char *tamper[] = {
        "DROP TABLE samples; CREATE VIEW samples AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
        " SELECT i AS result_id, i AS idx, 0.0 AS ms FROM n",
        "CREATE TRIGGER spy AFTER INSERT ON results BEGIN DELETE FROM env; END",
        "CREATE INDEX extra ON env(value)",
        "CREATE TABLE extra(x)",
    };
    for (size_t t = 0; t < sizeof tamper / sizeof *tamper; t++) {
        char dir[] = "/tmp/ppb-schema-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char path[300], cmd[400];
        snprintf(path, sizeof path, "%s/b.db", dir);
        ppb_store *s = NULL;
        ppb_err err = {{0}};
        assert_int_equal(ppb_store_open(&s, path, &err), 0);
        ppb_store_close(s);
        sqlite3 *raw = NULL;
        assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
        assert_int_equal(sqlite3_exec(raw, tamper[t], NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(raw);
        assert_int_equal(ppb_store_open(&s, path, &err), PPB_EINPUT);
        assert_null(s);
        assert_non_null(strstr(err.msg, "does not have ppbench's schema"));
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
    }
}

static void test_target_names_stay_in_targets(void **state)
{
    (void)state;
    ppb_target t;
    ppb_err err = {{0}};
    /* The control: a plain name loads, so the refusals below are about the name. */
    assert_int_equal(ppb_target_load_named(suites_dir(), "h200", &t, &err), 0);
    static const char *const escapes[] = {"../targets/h200", "..", "./h200", "/etc/passwd",
                                          "targets/../h200", ".hidden", "h200\n", ""};
    for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
        err.msg[0] = '\0';
        assert_int_equal(ppb_target_load_named(suites_dir(), escapes[i], &t, &err), PPB_EINPUT);
        assert_true(err.msg[0] != '\0');
    }
}

static void test_model_names_stay_in_models(void **state)
{
    (void)state;
    ppb_model m;
    ppb_err err = {{0}};
    assert_int_equal(ppb_model_load_named(suites_dir(), "llama-3.1-8b", &m, &err), 0);
    static const char *const escapes[] = {"../models/llama-3.1-8b", "..", "./llama-3.1-8b",
                                          "/etc/passwd", "models/../llama-3.1-8b", ""};
    for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
        err.msg[0] = '\0';
        assert_int_equal(ppb_model_load_named(suites_dir(), escapes[i], &m, &err), PPB_EINPUT);
        assert_true(err.msg[0] != '\0');
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_schema_is_untrusted),
        cmocka_unit_test(test_foreign_schema_objects_are_refused),
        cmocka_unit_test(test_target_names_stay_in_targets),
        cmocka_unit_test(test_model_names_stay_in_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
