#!/usr/bin/env bash
# The logic of the arh GitHub Action (action.yml): install arh, run `arh validate` and, when a
# baseline is given, `arh compare` on the JSON report it wrote; publish the reports as outputs and
# in the step summary, and exit with arh's own status.
#
# Every input arrives as an environment variable (ARH_INPUT_*) and is only ever expanded inside
# double quotes or as a glob pattern, so a value is always data: never code, never an option.
# Written for bash 3.2 (the /bin/bash of macOS) and Git for Windows' bash: no arrays (the
# argument list is built in "$@"), no mapfile, no ${var,,}, no associative arrays.
#
# arh runs where the step starts (the workspace): the relative paths of the inputs are relative to
# 'working-directory', so they are prefixed with it, and the paths in the reports (SARIF, JUnit)
# are relative to the workspace, as code scanning and the test reporters read them.
#
# Environment:
#   ARH_INPUT_POLICY, ARH_INPUT_TRACES (paths, directories or globs, by line or blank), ARH_INPUT_BASELINE,
#   ARH_INPUT_FAIL_ON, ARH_INPUT_MAX_SCORE_DROP, ARH_INPUT_ANY_STEP, ARH_INPUT_FAIL_UNDER,
#   ARH_INPUT_FORMAT, ARH_INPUT_OUTPUT_DIR, ARH_INPUT_WORKING_DIRECTORY   the action's inputs
#   GITHUB_ACTION_PATH            the action's checkout, installed with pip into a virtualenv
#   RUNNER_TEMP                   where the virtualenv goes
#   GITHUB_OUTPUT, GITHUB_STEP_SUMMARY   files the runner reads back (skipped when unset)
#   ARH_ACTION_BOOTSTRAP_PYTHON   the Python that creates the virtualenv (default: python3, python)
#   ARH_ACTION_PYTHON             a Python that already has arh installed: nothing is installed
#                                 (the tests use it; so can a job that installed arh itself)

set -u
unset CDPATH # a relative 'cd' below must not land elsewhere

output() {
    [ -n "${GITHUB_OUTPUT-}" ] || return 0
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
}

summary() {
    [ -n "${GITHUB_STEP_SUMMARY-}" ] || return 0
    printf '%s\n' "$1" >>"$GITHUB_STEP_SUMMARY"
}

stop() {
    # stop before arh has written any report: exit status $1, with every output action.yml
    # declares (the reports' empty, the verdict 'error': nothing was checked) and a one-line
    # summary $2
    output verdict error
    output exit-code "$1"
    for name in json-report markdown-report junit-report sarif-report compare-report \
        compare-markdown-report; do
        output "$name" ""
    done
    summary "$2"
    echo "arh verdict: error (exit status $1)"
    exit "$1"
}

usage_error() {
    printf 'arh action: error: %s\n' "$1" >&2
    # the message may quote input values: the summary, which GitHub renders, does not
    stop 2 "arh action: usage error (exit status 2) before arh ran; the job log says why."
}

trim() {
    # print $1 without leading and trailing blanks (spaces, tabs, carriage returns)
    _t=$1
    _t=${_t#"${_t%%[![:space:]]*}"}
    _t=${_t%"${_t##*[![:space:]]}"}
    printf '%s' "$_t"
}

tidy() {
    # print the path $1 without trailing slashes (a root, / or C:/, keeps its own) and without
    # leading ./ parts
    _p=$1
    while :; do
        case $_p in
            / | [A-Za-z]:/) break ;;
            */) _p=${_p%/} ;;
            ./?*) _p=${_p#./} ;;
            *) break ;;
        esac
    done
    printf '%s' "$_p"
}

policy=$(trim "${ARH_INPUT_POLICY-}")
traces=${ARH_INPUT_TRACES-}
baseline=$(trim "${ARH_INPUT_BASELINE-}")
fail_on=$(trim "${ARH_INPUT_FAIL_ON-}")
max_score_drop=$(trim "${ARH_INPUT_MAX_SCORE_DROP-}")
any_step=$(trim "${ARH_INPUT_ANY_STEP-}")
fail_under=$(trim "${ARH_INPUT_FAIL_UNDER-}")
input_format=$(trim "${ARH_INPUT_FORMAT-}")
output_dir=$(trim "${ARH_INPUT_OUTPUT_DIR-}")
working_directory=$(trim "${ARH_INPUT_WORKING_DIRECTORY-}")

# Every input but 'traces' is one value on one line: a line break in a path could also end a
# line of GITHUB_OUTPUT early and write outputs of its own (verdict=pass).
newline='
'
for pair in "policy:$policy" "baseline:$baseline" "fail-on:$fail_on" \
    "max-score-drop:$max_score_drop" "any-step:$any_step" "fail-under:$fail_under" \
    "format:$input_format" "output-dir:$output_dir" "working-directory:$working_directory"; do
    case ${pair#*:} in
        *"$newline"* | *"$(printf '\r')"*) usage_error "the '${pair%%:*}' input must be a single line" ;;
    esac
done

[ -n "$policy" ] || usage_error "the 'policy' input is required"
[ -n "$(trim "$traces")" ] || usage_error "the 'traces' input is required (paths, directories or globs, one per line or separated by blanks)"
if [ -z "$baseline" ]; then
    [ -z "$fail_on" ] || usage_error "'fail-on' applies only with a 'baseline'"
    [ -z "$max_score_drop" ] || usage_error "'max-score-drop' applies only with a 'baseline'"
    [ -z "$any_step" ] || usage_error "'any-step' applies only with a 'baseline'"
fi
case $any_step in
    '' | true | false) ;;
    *) usage_error "the 'any-step' input must be true or false, not '$any_step'" ;;
esac
# what arh compare would refuse, refused before the traces are validated
case $fail_on in
    '' | regressions | failures | never) ;;
    *) usage_error "the 'fail-on' input must be regressions, failures or never, not '$fail_on'" ;;
esac
if [ -n "$max_score_drop" ]; then
    [ "${fail_on:-regressions}" = regressions ] ||
        usage_error "'max-score-drop' applies only with 'fail-on: regressions', not '$fail_on'"
    number='^[+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$'
    [[ $max_score_drop =~ $number ]] ||
        usage_error "the 'max-score-drop' input must be a number of points, 0 or more, not '$max_score_drop'"
fi

# -- Paths ---------------------------------------------------------------------------------------

# The relative paths of the inputs are relative to the working directory; arh runs where the step
# started, with those paths prefixed by it ('$prefix'), so that every path it writes into a report
# is relative to the workspace (the repository root), as code scanning and test reporters expect.
[ -n "$working_directory" ] || working_directory=.
wd=$(tidy "$working_directory")
if [ "$wd" = . ]; then
    prefix=
else
    [ -d "$wd" ] || usage_error "the working directory '$working_directory' does not exist"
    prefix="${wd%/}/"
fi
start=$PWD

in_wd() {
    # set $r to the path $1 relative to where the step started: absolute paths, drive paths and
    # '-' (standard input) as they are
    case $1 in
        - | /* | [A-Za-z]:[\\/]*) r=$1 ;;
        .) if [ -n "$prefix" ]; then r=$wd; else r=.; fi ;;
        *) r=$prefix$1 ;;
    esac
}

in_wd "$policy"
policy=$r
if [ -n "$baseline" ]; then
    in_wd "$baseline"
    baseline=$r
fi
[ -n "$output_dir" ] || output_dir=arh-reports
in_wd "$(tidy "$output_dir")"
output_dir=$r

# -- Install -------------------------------------------------------------------------------------

install_failed() {
    stop "$1" "arh action: installing arh failed (exit status $1); the job log says why."
}

if [ -n "${ARH_ACTION_PYTHON-}" ]; then
    python=$ARH_ACTION_PYTHON
else
    [ -n "${RUNNER_TEMP-}" ] || usage_error "RUNNER_TEMP is not set (run this script from action.yml)"
    [ -n "${GITHUB_ACTION_PATH-}" ] || usage_error "GITHUB_ACTION_PATH is not set (run this script from action.yml)"
    bootstrap=${ARH_ACTION_BOOTSTRAP_PYTHON-}
    if [ -z "$bootstrap" ]; then
        if command -v python3 >/dev/null 2>&1; then bootstrap=python3; else bootstrap=python; fi
    fi
    venv="$RUNNER_TEMP/arh-venv"
    if [ ! -d "$venv" ]; then
        echo "Creating a virtualenv for arh in $venv"
        "$bootstrap" -I -m venv "$venv" || install_failed $?
    fi
    if [ -x "$venv/bin/python" ]; then python="$venv/bin/python"; else python="$venv/Scripts/python.exe"; fi
    echo "Installing arh from $GITHUB_ACTION_PATH"
    "$python" -I -m pip install --disable-pip-version-check --no-input --quiet "$GITHUB_ACTION_PATH" ||
        install_failed $?
fi

# -- Reports -------------------------------------------------------------------------------------

mkdir -p -- "$output_dir" || usage_error "cannot create the output directory '$output_dir'"
case $output_dir in
    */) reports=$output_dir ;; # a root: / or C:/
    *) reports="$output_dir/" ;;
esac
json_report="${reports}report.json"
markdown_report="${reports}report.md"
junit_report="${reports}report.xml"
sarif_report="${reports}report.sarif"
compare_report="${reports}compare.json"
compare_markdown_report="${reports}compare.md"

# A baseline that is one of this run's report files (the report of an earlier run, downloaded
# back into the output directory) is read from a copy: the file itself is replaced below.
if [ -n "$baseline" ]; then
    for report in "$json_report" "$markdown_report" "$junit_report" "$sarif_report" \
        "$compare_report" "$compare_markdown_report"; do
        [ "$baseline" -ef "$report" ] || continue
        copy=$(mktemp "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/arh-baseline.XXXXXX") ||
            usage_error "cannot copy the baseline '$baseline' aside before this run's reports replace it"
        trap 'rm -f -- "$copy"' EXIT
        cp -- "$baseline" "$copy" ||
            usage_error "cannot copy the baseline '$baseline' aside before this run's reports replace it"
        echo "The baseline $baseline is replaced by this run's reports: it is read from a copy, $copy"
        baseline=$copy
        break
    done
fi

# a report left by an earlier run in the same job must not pass for this run's
rm -f -- "$json_report" "$markdown_report" "$junit_report" "$sarif_report" \
    "$compare_report" "$compare_markdown_report"

# -- Arguments -----------------------------------------------------------------------------------

# Options use the --name=value form, so that a value starting with '-' stays a value.
set -- "--policy=$policy"
[ -z "$input_format" ] || set -- "$@" "--format=$input_format"
[ -z "$fail_under" ] || set -- "$@" "--fail-under=$fail_under"

# Entries are separated by line breaks and, as in arh 0.2.x, by blanks: a line is one entry when
# it names an existing path or a glob that matches something as a whole (a path with a space in
# it), else each of its blank-separated words is one.
entries=
while read -r line || [ -n "$line" ]; do
    line=$(trim "$line")
    [ -n "$line" ] || continue
    case $line in
        *[[:space:]]*)
            in_wd "$line"
            if [ ! -e "$r" ] && ! compgen -G "$r" >/dev/null; then
                set -f # the words are split here, their globs expanded below
                for word in $line; do
                    entries="$entries$word
"
                done
                set +f
                continue
            fi
            ;;
    esac
    entries="$entries$line
"
done <<EOF
$traces
EOF

# The traces follow '--', so that a path starting with '-' is a path. Each entry is one path; an
# entry holding *, ? or [ is a glob, expanded here in the working directory (no field splitting:
# IFS is empty) and kept as given when nothing matches, so that arh reports it as missing.
set -- "$@" --
saved_ifs=$IFS
IFS=
while read -r line || [ -n "$line" ]; do
    line=$(trim "$line")
    [ -n "$line" ] || continue
    case $line in
        *'*'* | *'?'* | *'['*)
            case $line in
                /* | [A-Za-z]:[\\/]*) here= ;;
                *) here=$prefix ;;
            esac
            [ -z "$here" ] || cd -- "$wd" || usage_error "cannot enter the working directory '$working_directory'"
            for path in $line; do
                set -- "$@" "$here$path"
            done
            [ -z "$here" ] || cd -- "$start" || usage_error "cannot return to the directory the step started in, '$start'"
            ;;
        *)
            in_wd "$line"
            set -- "$@" "$r"
            ;;
    esac
done <<EOF
$entries
EOF
IFS=$saved_ifs

# -- Run -----------------------------------------------------------------------------------------

# Text from the traces reaches the log. Workflow commands (lines starting with '::') are switched
# off while arh runs, so a hostile trace cannot issue one.
token=$(od -An -N16 -tx1 /dev/urandom 2>/dev/null | tr -d ' \n')
[ -n "$token" ] || token="arh$$x${RANDOM}x${RANDOM}x${RANDOM}"
echo "::stop-commands::$token"

arh() {
    # no standard input: a trace input '-' reads nothing instead of waiting. -P: the current
    # directory (the user's files) is not searched for modules, so a json.py there cannot replace
    # the standard library's (-I for venv and pip above; it would also drop PYTHON* variables)
    "$python" -P -m agent_reliability_harness "$@" </dev/null
}

input_errors() {
    # print the number of inputs the JSON report $1 says could not be read (0 if it cannot tell)
    "$python" -P -c '
import json, sys
try:
    with open(sys.argv[1], "rb") as stream:
        count = json.load(stream)["summary"]["input_errors"]
except Exception:
    count = 0
print(count if type(count) is int else 0)
' "$1" </dev/null
}

compared=no
all_the_same=
if [ -z "$baseline" ]; then
    arh validate "--json-out=$json_report" "--md-out=$markdown_report" \
        "--junit-out=$junit_report" "--sarif-out=$sarif_report" "$@"
    status=$?
    validate_status=$status
else
    echo "arh validate (the candidate's reports; the comparison below decides the exit status):"
    arh validate "--json-out=$json_report" "--md-out=$markdown_report" \
        "--junit-out=$junit_report" "--sarif-out=$sarif_report" "$@"
    validate_status=$?
    status=$validate_status
    echo
    if [ -f "$json_report" ]; then
        # The comparison reads the candidate's JSON report: the traces are validated once, and a
        # report written into the output directory is never read back as a trace.
        set -- "--baseline=$baseline" "--candidate=$json_report" "--fail-on=${fail_on:-regressions}"
        [ -z "$max_score_drop" ] || set -- "$@" "--max-score-drop=$max_score_drop"
        [ "$any_step" != true ] || set -- "$@" --any-step
        arh compare "--json-out=$compare_report" "--md-out=$compare_markdown_report" "$@"
        status=$?
        compared=yes
        # an input arh validate could not read or a report it could not write (status 3) is an
        # input error whatever the gate says (0 or 1), as when arh compare validates the traces
        # itself
        if [ "$validate_status" -eq 3 ] && { [ "$status" -eq 0 ] || [ "$status" -eq 1 ]; }; then
            status=3
            unread=$(input_errors "$json_report")
            case $unread in '' | *[!0-9]*) unread=0 ;; esac
            case $unread in
                0) unread="a report arh validate could not write" ;;
                1) unread="1 candidate input error" ;;
                *) unread="$unread candidate input errors" ;;
            esac
            all_the_same="exit status 3 whatever the gate says: $unread"
            echo "$all_the_same (arh validate's errors above)"
        fi
    fi
fi

echo "::$token::"

# -- Outputs and summary -------------------------------------------------------------------------

# pass and fail are verdicts on the agent; any other status (2, 3) says that the check could not
# run, or not on every input (docs/exit-codes.md)
case $status in
    0) verdict=pass ;;
    1) verdict=fail ;;
    *) verdict=error ;;
esac

# Paths are relative to where the step started (the workspace), or absolute, as arh was given them.
output verdict "$verdict"
output exit-code "$status"
for pair in json-report:report.json markdown-report:report.md junit-report:report.xml \
    sarif-report:report.sarif compare-report:compare.json compare-markdown-report:compare.md; do
    name=${pair%%:*}
    file="$reports${pair#*:}"
    if [ -f "$file" ]; then output "$name" "$file"; else output "$name" ""; fi
done

if [ -n "${GITHUB_STEP_SUMMARY-}" ]; then
    if [ "$compared" = yes ]; then
        if [ -f "$compare_markdown_report" ]; then
            cat -- "$compare_markdown_report" >>"$GITHUB_STEP_SUMMARY"
            if [ -n "$all_the_same" ]; then
                # say why the exit status is not the gate's, as arh compare's own report would
                summary ""
                summary "**E${all_the_same#e}** (the job log and the validation report below say why)."
            fi
        else
            summary "arh compare exited with status $status before writing its report; the job log says why."
        fi
        summary ""
    fi
    if [ -f "$markdown_report" ]; then
        cat -- "$markdown_report" >>"$GITHUB_STEP_SUMMARY"
    else
        summary "arh exited with status $validate_status before writing a report; the job log says why."
    fi
fi

echo "arh verdict: $verdict (exit status $status)"
exit "$status"
