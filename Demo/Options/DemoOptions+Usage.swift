/// The text `--help` prints.
extension DemoOptions {
    static let usage = """
        Usage: swift run Demo [options] [url ...]
               swift run Demo [options] --input FILE
               swift run Demo [options] --metalink FILE|URL --output DIR

        Downloads a batch of requests through one NetworkQueue and shows one overall progress bar.
        With no URL, starts a local server and downloads a built-in demo set (about 55 MB, 5-10 s).

        Options:
          --concurrency N   requests in flight at once (default 4; 0 = unlimited, within the
                            queue's ceiling: half the open-file limit, at most 4096)
          --concurrency auto[:N]
                            find each server's level: 4 at a time to start, doubled while the
                            throughput grows by a fifth or more, then one more tried now and then and
                            kept if it adds 5%; a 429, 503, reset or timeout lowers it at once (to 3/4
                            of those in flight) and that level is not tried again for 5 minutes. The
                            servers together have a level of their own, found the same way from their
                            total throughput, at most N (default 64); --per-host bounds each server.
                            Each change is a log line (-v), the bar shows "auto: N at a time",
                            --progress-json "concurrency"
          --lifo            start the newest pending request first (default: oldest first)
          --no-accurate     skip the HEAD preflight that learns the sizes up front (by default a
                            HEAD goes before each GET of a batch of up to 64, and before each GET of a
                            server whose first 4 HEADs find files of 1 MiB or more; a longer list of
                            smaller files asks 4 HEADs per server and estimates the rest; a paced
                            server is decided by its first). While any size is estimated, the bar's
                            percentage and total show ~ (a list of small files then a big one
                            reads ~99% until the big one's size is known; then the bar shows the
                            share of the bytes)
          --head-all        a HEAD before every GET, however long the list (one more request per file):
                            every size is asked, none estimated. The HEADs run ahead of the GETs (8
                            per slot of --concurrency), so a list longer than that has its exact total
                            once the last HEAD is answered; until then the bar shows ~
          --keep-going      do not cancel the other requests when one fails
          --no-dead-hosts   never judge a server down: by default, after 3 rounds of connects or name
                            lookups to one fail with no answer between, its requests are held (nothing
                            sent, no retry spent) and one probes it after 1 s, then 2 s, 4 s...: as many
                            probes as --retries, so a restart shorter than that window loses nothing.
                            Any answer releases them ("held", "back" lines, and the summary says how
                            long); if every probe fails they end at once ("host down", counted apart),
                            as does a line whose turn comes within 1 s of a failed probe; a later line
                            probes it again alone (the others wait for its answer), the probes at
                            least 2 s, 4 s ... up to 60 s apart: a server that is back is asked again.
                            The other servers go on
          --retries N       send a failed request again up to N times (default 2), after 1 s, 2 s, 4 s...
                            (random up to that, at most 30 s), when it could not connect, timed out, lost
                            its connection or got 408, 429, 500, 502, 503 or 504 (after its Retry-After).
                            Every stage is retried alike: a HEAD (accurate progress) that fails so is
                            sent again up to N times, then its GET goes with its size unknown and N
                            retries of its own; a split file's ranges and a mirror go on over the
                            sources that answer. A server that stops answering connects is held, not
                            failed (see --no-dead-hosts)
          --flaky           add a request that fails twice before it succeeds (offline set only)
          --output DIR      save each URL to DIR under its last path component (made safe; names that
                            collide get -2, -3...); a .part left by an interrupted run is continued, and
                            a file already there is asked for only if it changed, in one request and no
                            HEAD: If-None-Match with the ETag it was saved under (kept with it, the
                            user.networkqueue.etag attribute), else If-Modified-Since with its time
                            (saved files take their Last-Modified). 304 keeps it ("unchanged"), 200
                            replaces it through its .part. A file whose size or modification second differ
                            from those recorded with its ETag was changed on disk: it is fetched whole. An
                            edit that keeps both is not seen (the file is asked for as saved), nor is any
                            edit where no ETag could be recorded (a file system without user attributes:
                            the date alone is sent). Running the same command again fetches only what
                            changed.
                            Two runs on one folder at once: a file the other run moved into place first is
                            kept, not failed (--shard splits a list between runs without overlap).
                            The folder is guarded: every name (a URL's, out=, a response's) follows one
                            rule (no /, control, format or line-separator characters, no leading dots,
                            at most 200 bytes, never ending in .part, .part.validator, .part.segments:
                            a URL's or response's such name gets a _ after it, an out= one is a bad
                            line); folders below it are made without following a link, and a line
                            whose folder is a symbolic link fails alone, nothing written through it.
                            Each saved file records its URL (the user.xdg.origin.url attribute, as
                            curl --xattr and wget2 --xattr write it): a file that records another URL is
                            another's, never kept as unchanged, skipped or replaced for this line, whose
                            file takes the next free name (-2); a part is continued only by its own URL.
                            The list, netrc and cookie files may lie in it: no line's file takes their names
          --content-disposition
                            with --output: name each file as its response's Content-Disposition says
                            (RFC 6266; filename* preferred, as wget2's option), in the folder its line
                            gives it, made safe (its last path component, no control characters or
                            leading dots, at most 200 bytes); a name never replaces a file: one taken
                            gets -2, -3..., unless the file there records this URL (an earlier run's),
                            which it replaces. The report, --progress-json and --verbose say where each
                            went. A rerun finds each file by the URL it records and asks for it only if
                            it changed (no second copy); on a file system without user attributes the URL
                            cannot be recorded, and each rerun adds a copy (-2, -3...).
                            --no-clobber looks at the name from the URL
          --tree            with --output: keep each URL's folders under the output folder, host first
                            (out/example.com/pub/file.iso; a port given in the URL joins the host as
                            host:port), as wget's -x (-x is --proxy here, as in curl); folders are
                            made as needed
          --cut-dirs N      with --tree: drop the first N folders of each URL's path (wget's)
          --replace         with --output: download files that exist already again, unconditionally
          --no-clobber      with --output: keep every file that exists already and send no request for
                            it (files only appear complete, renamed into place, so one that exists is
                            whole); the summary counts them. Fetches only what is missing
          -s, --split N     with --output: fetch each file over up to N connections (1 to 16, default 1),
                            as aria2c -s N -x N: ranges of at least 1 MiB, a connection that finishes
                            takes half of the largest range left. Only for a server that sends a length,
                            a validator and Accept-Ranges: bytes (else one connection). Every connection
                            counts toward --concurrency (raised to N unless given); the ones past the
                            first are used only when no other file waits for a slot. A server that
                            answers its ranges wrongly is asked for no more: the file goes on over its
                            first connection, never worse than without --split
          --per-host N      at most N transfers at once per server (default 0 = no per-host limit)
          --rate N/U        start at most N requests per unit U (s, m, h or d; N alone: per hour, as
                            curl's) to each server, spaced evenly, never in a burst. Unlike curl's
                            --rate it holds with transfers in parallel; HEADs and --split connections
                            count. A paced request waits without taking a slot: other servers go on
          --wait S          wait S seconds (or Nm, Nh, Nd) between two starts to one server, as wget's
                            --wait, however many transfers run at once (with --rate: the longer wait)
          --random-wait     make each wait 0.5 to 1.5 times as long, drawn anew each time (wget's)
          --dry-run         check each URL instead of downloading it: a HEAD (a GET of its first byte
                            where HEAD is refused) under the same limits (--concurrency, --per-host,
                            --rate, --retries); prints the status, size, the file name it would write
                            and the final URL after redirects, then a total. Writes nothing but
                            --report and --progress-json (its lines, as for a download): no folder,
                            no --save-session (nothing is finished), no --save-cookies; exit 1 if any
                            URL would fail
          --limit-rate R    cap the total receive rate, e.g. 500K or 2M bytes per second (curl only)
          --max-time S      fail a request that has not ended S seconds after its first attempt
                            started, retries and their waits included (paused time not counted); not
                            retried (default: 7 days)
          --connect-timeout S
                            fail an attempt whose connection (name lookup, connect, TLS handshake)
                            is not made within S seconds; retried as a failed connect (default: 20;
                            curl only: URLSession has no such bound)
          --resolve HOST:PORT:ADDRESS[,ADDRESS...]
                            connect to HOST:PORT at ADDRESS (IPv6 in brackets), never looking the name
                            up, as curl's: the request still names HOST (Host field, TLS name and
                            certificate). Repeat for more hosts; curl transport only. Names not pinned
                            are looked up once for the whole batch (one DNS cache for every engine
                            thread)
          --speed-limit B   fail an attempt that moves fewer than B bytes per second on average over
                            --speed-time seconds (default 30); the retries continue its part. The
                            queue's own --limit-rate never counts as slow
          --speed-time S    the window of --speed-limit, in seconds (alone: --speed-limit 1)
          --max-filesize B  fail a response larger than B bytes (like 64K, 500M, 2G; K = 1,000):
                            its transfer stops at once and nothing of it is kept
          --input FILE      read the requests from FILE (- for standard input), one a line:
                            URL [MIRROR ...] [sha256:HEX|sha512:HEX] [out=NAME] [dir=SUB], fields apart
                            by TABs (as aria2's input files) or spaces. out= names the file and dir= its
                            folder under --output (aria2's names; a TAB-separated one may hold spaces;
                            one that would leave the output folder, with '..', '/' or an absolute
                            path, an out= name the rule above would change (over 200 bytes, ending in
                            .part..., leading dots, hidden characters) or a dir= part ending in .part is
                            a bad line: exit 2, with what to mend). Further URLs are mirrors of the same file (at most
                            16), which share its segments with --split and stand in when a location
                            fails (its HEAD too); at the end of the file a range that lags is raced by a
                            free connection; a mirror's 429 holds its server for the run; a file with a
                            checksum that fails it after several served it is fetched again from one; they may run other
                            server software (each is held to its own ETag, agreeing on the length and
                            Last-Modified); blank lines and # comments are skipped. A file
                            whose body does not match its checksum fails and nothing of it is kept; a
                            list runs as with --keep-going, so the other files are still fetched. The
                            list is opened once and read as a stream (a pipe or <(command) too; a regular
                            file's lines are counted first), so its length costs no memory; a line longer
                            than 65536 bytes is refused (exit 2); with --output, names are unique over the
                            whole list (a URL gets the same name whether the list runs whole or in shards).
                            aria2's input files are read as aria2 reads them: lines that start with a
                            space or a TAB are options of the URL above: out=NAME, dir=SUB (an absolute
                            one, as aria2 saves it, must lie inside --output), checksum=sha-256=HEX (or
                            sha-512), header=NAME: VALUE (that file's requests only, never after a
                            redirect to another origin); any other option (gid=, continue=...) is named
                            once on standard error and ignored. A regular file is read through before
                            anything is sent: a malformed one is refused (exit 2) before its first
                            request; a pipe stops at its first bad line. With --output, a line whose
                            URL ends in .meta4 or .metalink names a Metalink document: it is fetched
                            and its files are the line's (as --metalink's, named among the list's
                            names, in the line's dir=; out= or a checksum there is a bad line); the
                            line leaves a --save-session once all of them finished; a document that
                            cannot be fetched or is refused is a bad line
          --metalink FILE|URL
                            with --output: fetch the files a Metalink document names (Metalink 4,
                            .meta4, RFC 5854, or Metalink 3, .metalink), each under its own name in
                            --output, from its best location (lowest priority first; ftp and
                            torrent locations are skipped) with the others as its mirrors (as an
                            --input line's), checked against its strongest hash (sha-512, else
                            sha-256; md5 and sha-1 alone are named weak on standard error and not
                            checked). A URL is fetched first (at most 16 MB). The whole document is
                            checked before anything is sent: a DOCTYPE or entity, a name that is not
                            one safe file name (a / or .., leading dots, hidden characters, a .part
                            ending), a size or hash that is malformed, piece hashes that do not cover
                            the size, a file with no http(s) location, or more than 10,000 files,
                            1,000 locations a file or 16 MB refuses it (exit 2, with the reason), and
                            nothing is fetched. Runs as with --keep-going
          --save-session FILE
                            with --input: keep in FILE the lines of the list not finished yet, every field
                            as written, so that after any end (Ctrl-C, a crash, kill -9) --input FILE
                            continues exactly the rest (aria2's --save-session, kept exact as each request
                            ends: a finished line is blanked in place into a comment, one small write; a
                            list from a pipe has its lines added as they are read). Failed lines stay.
                            FILE is created readable by its owner only (a list's URLs may carry tokens)
                            and is checked as --report's is; it may be the --input FILE itself, which is
                            then continued where it is (aria2's -i S --save-session S)
          --shard K/N       with --input: take only share K of N (0 <= K < N) of the list, chosen by
                            each URL, so that N runs on N machines split it with no coordinator and
                            may share one --output folder. Under a Kubernetes Indexed Job (completions
                            N): --shard $(JOB_COMPLETION_INDEX)/N; with GNU parallel:
                            parallel swift run Demo --input list.txt --output out --shard {}/4 ::: 0 1 2 3
          -H, --header 'Name: value'
                            send this header with every request (repeatable; a name given twice keeps
                            its last value). Values never appear in the Demo's output, and these
                            headers (but User-Agent) stay behind when a redirect leaves the origin
          --load-cookies FILE
                            start with the cookies of FILE, a Netscape cookie file as curl (-b) and wget
                            write one (#HttpOnly_ lines too; expired and malformed lines are skipped); a
                            cookie goes only where RFC 6265 allows (its domain, path, Secure, expiry)
          --save-cookies FILE
                            write every cookie at the end of the run to FILE, in the same format, whole
                            (written beside it and renamed over it), readable by its owner only; session
                            cookies are kept (expiry 0). May be the --load-cookies file; FILE is checked
                            as --report's is
          --netrc           send the credentials of ~/.netrc (machine HOST login USER password SECRET,
                            as curl, wget and aria2 read it) to the servers it names, as Basic
                            authorization: only to that host (a "default" entry is not used), never after
                            a redirect to another origin (scheme, host and port), never shown; a field
                            given with -H Authorization wins. A machine entry names a host, not a port
                            (as curl reads netrc): its credentials go to that host on any port, but
                            never follow a redirect to another port of it
          --netrc-file FILE the same from FILE
          -A, --user-agent UA
                            send User-Agent: UA (default: NetworkQueue-Demo/<version>
                            NetworkQueue/<version>); -A '' sends none (over --transport urlsession,
                            an empty one: Foundation always sends the field)
          -x, --proxy URL   go through this proxy, as curl writes one:
                            [http|https|socks5|socks5h://][user:password@]host[:port]
                            (default: the environment's http_proxy, https_proxy, all_proxy, no_proxy);
                            over urlsession on Linux it is handed on as those variables
          --report FILE     write one JSON line per request to FILE (emptied first) as each one ends:
                            url (redacted as the log is), line (of --input), file, outcome, status,
                            bytes, checksum (when checked), attempts, seconds, and for a failure its
                            kind, code (a transport error's URLError code) and error. A killed run keeps
                            the line of every request that ended. To run the failed lines again:
                            jq -r 'select(.error) | .line' FILE | awk 'NR==FNR{f[$1];next} FNR in f' - LIST > again.txt
                            FILE may not be the --input list, lie inside the --output folder, be
                            read-only or be anything but a regular file (a FIFO, a device): bad usage,
                            nothing touched. The same holds for every file the run writes (--report,
                            --save-session, --progress-json, --save-cookies), and no two of the list,
                            report, session, progress, cookie and netrc files may be one file (through
                            links and other spellings too), but --load-cookies and --save-cookies: all
                            checked before anything is created, emptied or sent
          --progress-json FILE
                            write the run to FILE as JSON lines, for a program to read while it goes
                            (- for standard output; the rest of the output then goes to standard error).
                            A stable format: every line has "type" and "time" (seconds since the start).
                            "progress" lines, at least once a second and at the end ("final": true):
                            fraction (0 to 1, never decreasing), finished, failed, cancelled, total,
                            total_final, bytes, bytes_expected (when exact), estimated (true while
                            the fraction rests on an estimate: sizes still unknown, HEADs sampled, or
                            an early estimate holding it above the bytes' share), bytes_estimate
                            (the estimated total, while sizes are unknown), rate (bytes a second), eta
                            (seconds), held (requests waiting for a server that asked the batch to
                            wait, or that stopped answering), held_servers (servers held because
                            they stopped answering connects). A "server" line when one is held,
                            back or down for good (server, change, held_for, failures). A line
                            per request event: "start", "headers" (status, length), "retry" (attempt,
                            delay, error), "pause", "resume", "end" (outcome: finished, unchanged,
                            failed or cancelled; status, bytes, kind, error); each with url (redacted
                            as the log is), and line (of --input) and file when there are. FILE is
                            checked as --report's is. With -, a reader that goes away (| head) stops the
                            run as curl's write error does: exit 23, partial files kept as on Ctrl-C
          --cacert FILE     trust the CA certificates of FILE (PEM) beside the system's, for servers
                            with certificates of their own authority (curl's --cacert; wget2's and aria2's
                            --ca-certificate). Without it, the environment's CURL_CA_BUNDLE, else
                            SSL_CERT_FILE, is read the same way. Read once at the start; a missing file,
                            a folder or one without a certificate is bad usage (exit 2). Without the CA
                            a server's certificate fails its file: "the server's certificate is not
                            trusted: SSL certificate problem: unable to get local issuer certificate"
          --cert FILE       show the certificate of FILE (PEM) to a server that asks for one (TLS
                            client authentication); its key in FILE too, or in --key FILE; --pass
                            PHRASE opens an encrypted key. Never shown to a proxy
          --key FILE        the private key (PEM) of --cert
          --pass PHRASE     the pass phrase of --key
          -k, --insecure    do not verify servers' certificates or names (anyone on the path can read
                            and change the transfers): every run that asks says so on standard error
          (--cacert, --cert and -k need the curl transport: URLSession on Linux cannot)
          -o -              write the one URL's file to standard output, in order, nothing else there
                            (every message goes to standard error): with --split N its chunks are
                            fetched over N connections at once (Range with If-Range, each of one
                            version of the file) within --window bytes ahead of the reader, which
                            they wait for when it is full: memory stays within the window, however
                            slow the reader. A server without a length or ranges: fetched whole into
                            a temporary file, written out at its end. A reader that goes away (| head)
                            ends the run with exit 23, as curl's write error; a failure, exit 1
          --window SIZE     with -o -: the most bytes fetched ahead of the reader (default 64M,
                            at least 1M)
          --on-finish CMD   after each file is saved (committed under its name; not one kept
                            unchanged), run CMD with the file's absolute path and its URL as its last two
                            arguments (--on-finish './unpack.sh --quiet'), or in place of its words
                            {file} and {url} when it has them (--on-finish 'sha256sum {file}').
                            Never through a shell: CMD is split at spaces into words and nothing else
                            in it is read (no quotes, $, globs or ;); the path and URL, which a server
                            may have named, are one argument each, as they are. CMD's program is found
                            at the start (along PATH when it has no /): a missing one is bad usage.
                            Standard input is /dev/null. A command's exit status goes to --report (a
                            line {"command":…,"file":…,"exit":N}) and --progress-json (type
                            "command"); one that fails is said on standard error and in the summary,
                            and fails nothing already saved (the exit status counts the downloads).
                            The run waits for every command before it ends
          --on-finish-jobs N
                            at most N commands at once (default 4); more files wait their turn
          --transport T     curl or urlsession (default: curl on Linux, falling back to urlsession
                            when libcurl cannot be loaded; urlsession elsewhere)
          -v, --verbose     print the queue's log (URLs redacted, no headers), a line per event, and,
                            after each request, a metrics line: HTTP version, connection, connect, first
                            byte, total, size
          -h, --help        show this help

        A server that answers 429 or 503 with Retry-After, or says its request budget is spent
        (RateLimit, X-RateLimit-Remaining: 0 with a reset), holds every new request to it until then
        (at most 60 s); requests under way go on, and so do the other servers.
        On a terminal, press p to pause every request that has not finished and r to resume them.
        Elsewhere (a pipe, a log) a list prints a line per request as it ends, and progress every second.
        Exit status: 0 when every request succeeded, 1 when any failed, 2 for bad usage, 23 when the
        reader of --progress-json - went away, 130 when interrupted by Ctrl-C (partial files stay for
        the next run in both). The summary counts the requests
        that ended too slow, past their deadline (--max-time) or too large (--max-filesize).
        """
}
