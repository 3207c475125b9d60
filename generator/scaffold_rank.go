package generator

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/dstgen/dstgen/internal/lazyre"
)

// The claim ranking of docs/plan-format.md §15.2: a sentence scores for
// the strongest promise it names (its kind), for the words that make it a
// promise rather than a description, for what it is about and for where it
// lives; words that mark a plan, a precondition, a hedge or an
// implementation note take points away. Only a sentence that names a
// promise and reaches minClaimScore is a candidate.

// minClaimScore is the least score a candidate needs: a strong promise in
// plain source, a medium one in the docs or a core package.
const minClaimScore = 10

// Promise kinds: each picks a category and the §7 stub's model, checker
// and fault (stubFor).
const (
	kindLinearizable = "linearizable"
	kindSession      = "session"
	kindMutex        = "mutual-exclusion"
	kindIsolation    = "isolation"
	kindAtomic       = "atomicity"
	kindExactlyOnce  = "exactly-once"
	kindIdempotent   = "idempotent"
	kindAtLeastOnce  = "at-least-once"
	kindDurability   = "durability"
	kindOrdering     = "ordering"
	kindMembership   = "membership"
	kindLiveness     = "liveness"
	kindPerformance  = "performance"
	kindOperational  = "operational"
	kindBoundary     = "boundary"
	kindFairness     = "fairness"
	kindConsistency  = "consistency"
	kindInvariant    = "invariant" // never / always: a safety property of some state
	// kindGuarantee is a promise stated only as one ("delivery is
	// guaranteed if …") in words of no other kind.
	kindGuarantee = "guarantee"
)

// promiseTerm is a phrase that names a promise of one kind, worth points.
// hints are literals one of which every match contains: a sentence
// without any is not run through the expression (most are not).
type promiseTerm struct {
	hints  []string
	re     *lazyre.Regexp
	points int
	kind   string
	// protocol marks a protocol property ("blocks until every earlier
	// write is applied", "steps down", "at most one … at a time"): it
	// counts only in a core package, where it states what the system
	// does, and is itself a stated property (a promise word).
	protocol bool
	// subject marks a term that counts only when the sentence names what
	// it is about (a leader, entries, the commit index).
	subject bool
	// follow, when set, is what must come right after a match for it to
	// name the promise: "read committed" names the isolation level before
	// "isolation", "level", a conjunction or punctuation, not before a
	// noun it modifies ("read committed data").
	follow *lazyre.Regexp
	// opening marks a term that counts only in the opening sentence of a
	// Go doc comment of a function named after the term's verb ("Sync
	// syncs …", "Flush the …"): what the call does, not a step of it
	// ("WriteToFile saves … and fsyncs it to disk").
	opening bool
	// refusal marks an error's doc that names the operation it refuses
	// ("ErrX is returned when a write is attempted in a read-only
	// transaction"): the system gives up the call to keep the property, a
	// refusal as the booster's.
	refusal bool
	// pkgDoc marks a term read only in a package doc: what the library
	// says it is ("Package kv implements a persistent key/value store").
	pkgDoc bool
}

// signal is a word that makes a sentence more (or less) of a promise;
// form marks the words that make it a promise rather than a description.
type signal struct {
	hints  []string
	re     *lazyre.Regexp
	points int
	name   string
	form   bool
}

// wordRE matches expr from a word boundary, in text lowered by lowerASCII.
func wordRE(expr string) *lazyre.Regexp { return lazyre.New(`\b(?:` + expr + `)`) }

// promiseTerms, strongest first within a kind.
var promiseTerms = func() []promiseTerm {
	t := func(hints, expr string, points int, kind string) promiseTerm {
		return promiseTerm{hints: strings.Split(hints, "|"), re: wordRE(expr), points: points, kind: kind}
	}
	// proto is a protocol property, read in core packages only.
	proto := func(hints, expr string, points int, kind string) promiseTerm {
		return promiseTerm{hints: strings.Split(hints, "|"), re: wordRE(expr), points: points, kind: kind, protocol: true}
	}
	// protoSubject is a protocol property that needs a subject.
	protoSubject := func(hints, expr string, points int, kind string) promiseTerm {
		return promiseTerm{hints: strings.Split(hints, "|"), re: wordRE(expr), points: points, kind: kind, protocol: true, subject: true}
	}
	// level is a term that names an isolation level only when the words
	// after it are the level's own (levelFollowExpr).
	level := func(pt promiseTerm) promiseTerm {
		pt.follow = lazyre.New(`^(?:` + levelFollowExpr + `)`)
		return pt
	}
	// opening is a term read only in a function's opening doc sentence,
	// when the function is named after its verb.
	opening := func(pt promiseTerm) promiseTerm {
		pt.opening = true
		return pt
	}
	// refuse is an error returned for an operation the property forbids,
	// read in core packages only: refusalFrameExpr, then the condition.
	refuse := func(cond string, points int, kind string) promiseTerm {
		return promiseTerm{hints: strings.Split(refusalHints, "|"), re: wordRE(refusalFrameExpr + `(?:` + cond + `)`), points: points, kind: kind,
			protocol: true, refusal: true}
	}
	// pkgDoc is a term read only in a package doc.
	pkgDoc := func(pt promiseTerm) promiseTerm {
		pt.pkgDoc = true
		return pt
	}
	return []promiseTerm{
		t("serializab", `strict(?:ly)?[- ]serializab\w*`, 7, kindIsolation),
		t("isolation", `snapshot[- ]isolation`, 7, kindIsolation),
		level(t("committed", `read[- ]committed`, 6, kindIsolation)),
		t("repeatable", `repeatable[- ]reads?`, 6, kindIsolation),
		t("serializab", `serializab\w*`, 6, kindIsolation),
		t("isolation", `isolation levels?`, 4, kindIsolation),
		// A commit refused when what it read was written meanwhile, and
		// writes that cannot conflict: "a transaction is aborted when it
		// conflicts with another", "the keys it read were modified since it
		// started", "blind writes never run into a conflict".
		t("conflict", `(?:transactions?|txns?|commits?|writes?|updates?) (?:\w+ ){0,3}?conflicts? with (?:another|a concurrent|an ?other|other|concurrent)\b|(?:abort\w*|fail\w*|reject\w*|rolled back|roll back) (?:\w+ ){0,4}?(?:on|with|because of|due to|after) (?:a |an )?(?:write[- ]|read[- ])?conflicts?\b|(?:never|not|no|cannot|can't) (?:\w+ ){0,2}?(?:encounter|hit|cause|see|raise|run into|get|produce) (?:\w+ ){0,2}?conflicts?\b`, 5, kindIsolation),
		t("modified|updated|written|changed|overwritten", `(?:reads?|read (?:keys?|rows?|set)|(?:keys?|rows?|values?|items?) (?:it |they |that were |the transaction )?read) (?:\w+ ){0,3}?(?:were|was|have been|has been|had been|weren't|were not|are not|aren't|is not|isn't) (?:\w+ )?(?:modified|updated|written|changed|overwritten)(?: \w+){0,3}? (?:concurrently|since|by another|by a concurrent|in the meantime|meanwhile)\b`, 5, kindIsolation),
		// What a transaction or iterator sees: the state as of its start,
		// not later writes. "Earlier commits are visible to a new
		// transaction", "reads after the commit timestamp see the delete",
		// "writes made after the iterator was created are not seen".
		t("visible", `(?:all |every )?(?:previous|prior|earlier|preceding) (?:\w+ ){0,2}?(?:commits?|writes?|transactions?|txns?|updates?) (?:are|is|become|becomes|will be) visible to\b`, 6, kindIsolation),
		t("snapshot|view|state", `(?:sees?|observes?|reads?|gets?) (?:a |the |its )?(?:consistent |stable )?(?:snapshot|view|state) (?:\w+ ){0,4}?(?:as of|at) (?:the |its |their )?(?:start|begin\w*|creation|start timestamp|read timestamp|start version|read version)\b|(?:sees?|observes?|reads?|gets?|has|have|is given) (?:a |the |its |one )?(?:consistent |stable |frozen |fixed )?(?:snapshot|view|state) (?:\w+ ){0,4}?as (?:it|they) (?:existed|was|were|stood|looked) (?:\w+ ){0,5}?(?:started|began|begun|opened|created|start|beginning|began)\b|(?:a |the )?snapshot (?:\w+ ){0,5}?(?:as of|at the (?:time|moment)) (?:\w+ ){0,2}?(?:was |is |were )?(?:created|started|began|begun|opened|taken)\b`, 5, kindIsolation),
		t("after|before", `(?:writes?|updates?|changes?|commits?) (?:\w+ ){0,3}?(?:after|since) (?:\w+ ){0,3}?(?:is |was |were |are )?(?:created|started|began|begun|opened|taken) (?:\S+ ){0,6}?(?:not|never|cannot|can't|won't) (?:\w+ ){0,3}?(?:see|seen|visible|observe\w*|view\w*)\b|only (?:\w+ ){0,3}?(?:writes?|updates?|changes?|commits?) (?:\w+ ){0,4}?before (?:\w+ ){0,4}?(?:can be|are|is|will be) (?:seen|visible|viewed|observed)\b|(?:reads?|transactions?|txns?|iterators?|readers?) (?:\w+ ){0,2}?(?:after|before|since) (?:this |the |that |its |their )?(?:commit|start|snapshot)(?: (?:timestamp|ts|version))? (?:\w+ ){0,2}?(?:see|observe|are unaffected|be unaffected|is unaffected)\b`, 5, kindIsolation),
		// A reader's fixed view (eighth round): "the iterator provides a
		// point-in-time view", "iterators made from it observe a stable
		// snapshot", "it observes the writes made before it, but no later
		// ones", "only the latest operation on a key is visible".
		t("point|snapshot|view", `(?:provides?|returns?|offers?|gives?|sees?|observes?) (?:a |an |the |its )?(?:[\w-]+,? ){0,2}?point[- ]in[- ]time (?:view|guarantee)s?\b|(?:sees?|observes?) (?:a |the |one )(?:same |single )?(?:stable|consistent|frozen|fixed) (?:snapshot|view)\b`, 5, kindIsolation),
		t("later|subsequent|newer|future", `(?:sees?|observes?|reflects?|includes?|reads?) (?:all )?(?:of )?(?:the |its )?(?:\S+ )?(?:existing|earlier|prior|previous|preceding|committed) (?:\w+ )?(?:mutations|writes|updates|changes|commits|operations)\b,? (?:but|and) (?:no|not|none of the|never) (?:\w+ )?(?:later|subsequent|newer|future)\b`, 5, kindIsolation),
		t("latest|last|most recent|newest", `only the (?:latest|last|most recent|newest) (?:\w+ )?(?:operations?|writes?|updates?|values?|versions?|mutations?) (?:\w+ ){0,3}?(?:is|are|will be|be|remains?) (?:visible|seen|kept|returned|observed|read)\b|last[- ]write(?:r)?[- ]wins`, 5, kindIsolation),
		// A stale value never overwrites a newer one (ninth round): "it
		// stops a compaction from overwriting newer records", "newer values
		// replace the stale ones".
		t("overwrit|replace|supersede|precedence", `(?:prevent\w*|avoid\w*|stops?|keeps?|never|not|don't|doesn't|won't|without) (?:\w+ ){0,3}?overwrit\w* (?:\w+ ){0,2}?(?:newer|later|more recent|fresher|latest) (?:\w+ )?(?:entries|values?|writes?|versions?|records?|data|updates?)\b|(?:newer|later|more recent|fresher) (?:\w+ )?(?:entries|values?|writes?|versions?|records?|data|updates?) (?:\w+ ){0,2}?(?:overwrite|replace|supersede|take precedence over|win over)s? (?:the )?(?:stale|older|old|earlier|outdated)\b`, 5, kindIsolation),
		t("nothing", `all[- ]or[- ]nothing`, 5, kindAtomic),
		// A transaction undone whole, or undone by a crash: "the entire
		// transaction is rolled back", "an unfinished commit is rolled back
		// after a crash".
		t("rolled|roll|undone", `(?:entire|whole|all (?:of )?(?:the|its)) (?:\w+ ){0,2}?(?:transactions?|batch(?:es)?|updates|changes|writes) (?:is |are |will be |gets )?(?:simply )?(?:rolled back|undone|discarded|aborted)|(?:transactions?|txns?|commit\w*|batch(?:es)?|updates|writes) (?:\w+ ){0,6}?(?:rolled back|undone) (?:\w+ ){0,6}?(?:crash\w*|power (?:loss|failure)s?)|(?:crash\w*|power loss) (?:\w+ ){0,4}?(?:rolls? back|undoes) (?:\w+ ){0,3}?(?:transactions?|txns?|commits?|batch(?:es)?|updates|writes)`, 5, kindAtomic),
		t("atomic", `atomic(?:ally|ity)?\b`, 2, kindAtomic),
		t("lineariz", `linearizab\w*`, 7, kindLinearizable),
		t("consisten", `strict(?:ly)? consisten\w*|(?:strong|high)(?:ly)? consisten\w*|strong consistency`, 6, kindLinearizable),
		t("stale", `stale reads?|(?:prevent\w*|avoid\w*|never|no) (?:\w+ ){0,2}?stale (?:data|values?|results?)`, 5, kindLinearizable),
		t("read", `(?:consistent|up[- ]to[- ]date) reads?`, 4, kindLinearizable),
		t("fresh|stale", `freshness|fresh(?:er|est)? (?:reads?|data|results?)|bounded[- ]staleness|staleness (?:bound|limit)s?|max(?:imum)? staleness`, 4, kindLinearizable),
		t("your|after", `read[- ]your[- ](?:own[- ])?writes?|read[- ]after[- ]write`, 6, kindSession),
		t("monoton", `monoton\w* (?:reads?|writes?)`, 6, kindSession),
		t("consisten", `(?:sequential(?:ly)?|causal(?:ly)?) consisten\w*`, 6, kindSession),
		t("exclusi", `mutual(?:ly)? exclusi\w*`, 6, kindMutex),
		t("held|holder|owner|exclusive", `(?:lock|lease|leadership) is held (?:until|by the caller|while|as long)|held by (?:one|a single) (?:caller|client|owner|holder)|only (?:the|one) (?:holder|owner)|exclusive (?:access|ownership)`, 4, kindMutex),
		t("one leader|one holder|one owner|one writer|split|single leader", `(?:at most|only|exactly) one (?:leader|holder|owner|writer)\b|split[- ]brain|single leader`, 5, kindMutex),
		// One writer at a time (ninth round): "there can only be one
		// read/write transaction at a time", "only one writer is open at once".
		proto("one|single", `(?:at most|only|no more than|just) (?:be |is |are |exists? )?(?:one|a single) (?:(?:read[/-]write|read[- ]and[- ]write|rw|write|writable|update|exclusive) (?:transactions?|txns?|tx|handles?|sessions?)|writers?) (?:\S+ ){0,3}?(?:at a time|at any (?:one )?time|at once|in flight|in progress|concurrently)\b`, 6, kindMutex),
		// Another process or writer kept out while one holds the store:
		// "a second process cannot open the file for writing at the same
		// time".
		// The data directory locked against a second process: "the directory
		// is locked so that no other process can open it", "the only
		// read-write process using this directory".
		proto("lock|process", `(?:exclusive(?:ly)? )?lock(?:s|ed)? (?:on )?(?:the |its |a )?(?:data |database |db )?director(?:y|ies) (?:\S+ ){0,6}?(?:other|another|second) (?:\w+ ){0,2}?process(?:es)?\b|(?:data |database |db )?director(?:y|ies)(?:'s)? (?:file )?lock\b,? (?:\S+ ){0,6}?(?:prevent\w*|keep\w*|stop\w*|block\w*) (?:any )?(?:other|another|a second) (?:\w+ ){0,2}?process(?:es)? from\b|(?:the |a )?only (?:[\w-]+ ){0,3}?process(?:es)? (?:\w+ ){0,2}?(?:using|opening|accessing|holding|writing to) (?:the |this |that |its )?(?:data |database |db )?(?:director(?:y|ies)|database|files?)\b`, 7, kindMutex),
		t("same time|concurrently|simultaneously", `(?:other|another|a second|no other|two) (?:\w+ ){0,3}?(?:process(?:es)?|writers?|clients?|instances?) (?:\S+ ){0,5}?(?:cannot|can ?not|can't|may not|are not able to|is not able to) (?:\w+\s+){0,4}?(?:at the same time|concurrently|simultaneously)`, 5, kindMutex),
		proto("step", `steps? down\b(?:\s+\S+){0,3}?\s+(?:when|if|once|after|unless|on)\b|(?:will|must|to|then) step down`, 4, kindMutex),
		t("once", `exactly[- ]once`, 7, kindExactlyOnce),
		t("once", `at[- ]least[- ]once`, 7, kindAtLeastOnce),
		t("redeliver", `redeliver\w* (?:\w+ ){0,3}?(?:unacknowledged|unacked|not acknowledged)|(?:unacknowledged|unacked) (?:\w+ )?(?:are|is|will be) redelivered`, 6, kindAtLeastOnce),
		t("redeliver", `redeliver\w*`, 2, kindAtLeastOnce),
		t("once", `at[- ]most[- ]once`, 5, kindIdempotent),
		// Delivery deduplicated: "prevents re-delivery of events", "never
		// delivered twice".
		t("deliver|duplicate", `(?:prevent\w*|no|never|without) (?:\w+ )?(?:re-?deliver\w*|duplicate (?:deliver\w*|messages?|events?))|(?:not|never) (?:be )?(?:re-?)?delivered (?:twice|again|more than once)`, 5, kindIdempotent),
		t("idempoten", `idempoten\w*`, 4, kindIdempotent),
		t("duplicat", `de-?duplicat\w*|duplicates? (?:are|is) (?:dropped|detected|discarded|ignored)`, 4, kindIdempotent),
		t("lost|lose|losing|loss", `never (?:be )?(?:lost|lose|loses|losing)|(?:is|are|be) (?:never|not) lost|no (?:acknowledged |acked |committed )?(?:data|writes?|messages?|entries|events) (?:is |are |will be |can be )?lost|without (?:any )?(?:data )?loss|(?:zero|no) data loss`, 7, kindDurability),
		t("surviv", `surviv\w* (?:\w+ ){0,5}?(?:crash\w*|restart\w*|reboot\w*|power|failures?|outages?|loss)`, 6, kindDurability),
		t("after", `(?:restored|recovered|intact|kept|available) (?:\w+ ){0,3}?after (?:a |the )?(?:reboot|restart|crash|failure|power loss)e?s?`, 6, kindDurability),
		t("across", `(?:preserv|kept|keep|retain)\w* (?:\w+ ){0,5}?across (?:\w+ ){0,3}?(?:restarts?|crash\w*|reboots?|leader (?:changes?|elections?)|failovers?)`, 6, kindDurability),
		t("crash", `crash[- ](?:safe\w*|consistent|recover\w*)`, 5, kindDurability),
		t("recovery", `(?:no|not (?:require|need)\w*|without (?:any )?|never needs?) (?:\w+ )?recovery (?:\w+ ){0,6}?(?:crash\w*|power (?:loss|failure)s?|restarts?)`, 5, kindDurability),
		t("durab", `durab\w*`, 5, kindDurability),
		t("disk|stable storage", `writes? (?:all|every) (?:of )?(?:the |its )?(?:changes|updates|writes|data|entries|pages|records) (?:\w+ )?to (?:the )?(?:disk|stable storage)`, 5, kindDurability),
		// What a function's doc says the call does, in its opening sentence
		// (eighth round): "Sync syncs the database to disk", and the
		// imperative "Flush the memtable to stable storage".
		opening(t("sync|flush|commit|write|push|save|persist", `(?:f?sync|flush|commit|write|push|save|persist)(?:es|s)? (?:the |all |its |any |every )?(?:[\w-]+ ){0,5}?to (?:the )?(?:disk|stable storage|durable storage|persistent storage)`, 5, kindDurability)),
		t("sync|disk|stable storage", `fsync\w*|f?datasync\w*|(?:sync(?:ed|s|'d|'ed)?|flushed|written) to (?:the )?(?:disk|stable storage)|persist\w* (?:\w+ )?(?:to|on) (?:the )?(?:disk|stable storage)`, 4, kindDurability),
		// What the package says it is (ninth round): "Package kv implements
		// an embeddable, persistent key/value store".
		pkgDoc(t("persistent", `(?:is|implements|provides) (?:a |an )(?:[\w-]+(?:,| and| or) )*(?:[\w-]+ )?(?:and |or )?persistent (?:[\w/-]+ ){0,2}?(?:stores?|databases?|dbs?|storage|engines?)\b`, 5, kindDurability)),
		// A torn or corrupt write found on reading back, and what is used
		// instead: "a page whose checksum does not match is detected and
		// the other copy is used".
		// A checksum checked on reading back: "the checksum of every entry
		// read is validated", "CRCs are verified on load".
		t("checksum|crc|hash|digest", `(?:validat|verif|check)\w* (?:the |a |its |their )?(?:checksums?|crcs?|crc32|hash(?:es)?|digests?) (?:\w+ ){0,3}?(?:on |when |while |for |of |at |upon )(?:every |each |all |any )?(?:\w+ )?(?:entry|entries|records?|blocks?|pages?|reads?|read|data|files?|load\w*|open\w*)\b|(?:checksums?|crcs?|hash(?:es)?|digests?) (?:\w+ ){0,3}?(?:is |are |get |gets )?(?:verified|validated|checked) (?:\w+ ){0,3}?(?:on|when|during|upon|while|at) (?:\w+ )?(?:read\w*|load\w*|open\w*|replay\w*|recovery|startup)\b`, 5, kindDurability),
		t("torn|corrupt|checksum|partial", `(?:torn|corrupt\w*|partial(?:ly)?[- ]written|checksum mismatch\w*) (?:\w+ ){0,6}?(?:(?:is|are|will be|gets) )?(?:detected|caught|rejected|discarded|skipped|ignored)|(?:detect\w*|catch\w*|reject\w*) (?:\w+ ){0,2}?(?:torn|corrupt\w*|partial(?:ly)?[- ]written) (?:writes?|pages?|records?|entries|blocks?|data|files?)`, 4, kindDurability),
		t("persist", `persist(?:ed|s|ent)?\b`, 1, kindDurability),
		t("order", `total(?:ly)? order\w*|(?:cluster|system|group|network)[- ]wide order\w*|global(?:ly)? order\w*`, 6, kindOrdering),
		t("order", `(?:same|log|commit|publish|arrival|insertion|sequence)(?:[- ](?:number|index|timestamp|id))? order\b`, 5, kindOrdering),
		t("order", `in[- ]order\b|in (?:the )?(?:proper|correct|right|causal|strict) order(?:ing)?\b`, 4, kindOrdering),
		t("revision|sequence|index|version|term", `(?:increments?|increases?|advances?|bumps?) (?:the )?(?:\w+ )?(?:revision|sequence|index|version|term)s?\b|(?:higher|greater|larger|lower|smaller) (?:\w+ )?(?:revision|sequence|index|term)s?\b`, 4, kindOrdering),
		t("monoton|strictly increasing", `monoton\w* (?:increas\w*|grow\w*)|strictly increasing`, 4, kindOrdering),
		t("fifo|first", `fifo order\w*|first[- ]in[- ]first[- ]out`, 5, kindOrdering),
		t("before", `(?:delivered|transmitted|sent|applied|processed|returned|seen|observed|committed) (?:\w+ ){0,6}?before`, 4, kindOrdering),
		t("the order", `in the order (?:that )?(?:they|it) (?:were|was|are|is) (?:committed|applied|written|received|sent|published|proposed|appended|acknowledged)`, 5, kindOrdering),
		proto("until|for|once|after", `(?:blocks?|waits?|returns?) (?:only )?(?:until|for|once|after) (?:\w+ ){0,6}?(?:committed|applied|replicated|acknowledged|acked|persisted|durable|broadcast\w*|delivered)`, 5, kindOrdering),
		proto("finish|complete|done|drain", `(?:blocks?|waits?)(?: waiting)? (?:until|for) (?:all |any |every )?(?:the )?(?:open |pending |outstanding |in-flight |running |active )?(?:transactions?|operations?|requests?|writes?|reads?) (?:to )?(?:finish|complete|be done|drain)`, 5, kindOrdering),
		proto("after", `(?:executed|run|invoked|fired) (?:only )?after (?:the |a |its )?(?:transactions?|txns?|batch(?:es)?|writes?) (?:has |have |is |are )?(?:been )?(?:successfully )?commit(?:s|ted)?\b`, 4, kindOrdering),
		proto("preceding|prior|previous|earlier", `(?:all|every) (?:preceding|prior|previous|earlier) (?:\w+ )?(?:operations?|writes?|entries|entry|commands?|requests?|updates?)`, 5, kindOrdering),
		proto("gaps", `(?:no|without|not have|never have) gaps`, 4, kindOrdering),
		// Keys walked in their sort order: "a cursor visits keys in byte
		// order", "iteration is in lexicographical order".
		t("order", `in (?:a |the )?(?:lexicographic(?:al(?:ly)?)?|byte|bytewise|byte-sorted|sorted|key|ascending)(?: sorted)? (?:key )?order\b`, 5, kindOrdering),
		t("fifo", `fifo`, 1, kindOrdering),
		t("order", `order(?:ed|ing)\b`, 2, kindOrdering),
		t("within", `within \d+(?:\.\d+)? ?(?:ms|milliseconds?|s|secs?|seconds?|min|minutes?)\b`, 5, kindLiveness),
		t("elect", `elects? a (?:new )?leader|leader election|new leader is elected`, 3, kindLiveness),
		proto("election", `(?:will|to|we) (?:cause|trigger|start|attempt|begin) (?:\w+ ){0,2}?(?:new )?elections?|(?:causes|triggers|starts|attempts|begins) (?:\w+ ){0,2}?(?:new )?elections?`, 4, kindLiveness),
		t("progress|available", `makes? progress|remains? available|stays? available|highly available`, 3, kindLiveness),
		t("toleran", `fault[- ]toleran\w*`, 2, kindLiveness),
		t("eventually", `eventually`, 2, kindLiveness),
		t("membership|cluster", `(?:cluster|group) membership|membership (?:change|view|of the cluster)s?|join(?:s|ing|ed)? (?:the|a|an) (?:existing )?cluster|form(?:s|ing)? a new cluster|(?:removed|leaves?) (?:from )?the cluster`, 3, kindMembership),
		t("membership", `membership`, 1, kindMembership),
		t("quorum", `(?:lose|losing|loss of|leads? to|lost) (?:the )?quorum|quorum loss|keeps? (?:a )?quorum`, 4, kindMembership),
		proto("suspect|dead|fail|left|refut", `suspect\w* (?:\w+ ){0,8}?(?:dead|failed)\b|(?:declar\w*|mark(?:s|ed|ing)?|consider(?:ed|ing|s)?) (?:\w+ ){0,3}?(?:dead|failed|left|gone)\b|refut\w*|detect\w* (?:[\w']+ ){0,6}?(?:failed|dead|failures?)\b`, 4, kindMembership),
		// What the protocol does with a failed node, and with a node that
		// left when it restarts.
		proto("failed|dead|departed|unreachable|crashed|join", `(?:remov|evict|reap|reclaim)\w* (?:a |the |any |all )?(?:failed|dead|departed|unreachable|crashed) (?:\w+ )?(?:nodes?|members?|peers?|servers?|replicas?)\b|(?:restart|reboot)\w* (?:\w+ ){0,3}?(?:re-?join\w*|join)\b|re-?join\w* (?:\w+ ){0,3}?after (?:a |the )?(?:leav\w*|restart\w*|reboot\w*)`, 4, kindMembership),
		proto("participate|considered|count", `(?:won't|will not|does not|doesn't|never|not) (?:\w+ ){0,2}?(?:participate in|considered for|counts? (?:toward|towards|for)) (?:\w+ ){0,3}?(?:elections?|commit\w*|quorum|votes?)`, 4, kindMembership),
		t("p9|p50|latency|throughput|/s", `p9\d(?:\.\d+)?|p50|latency|throughput|\d+ ?k? ?(?:ops|operations|requests|msgs|messages)/s(?:ec)?`, 2, kindPerformance),
		// A stable on-disk or wire format (eighth round): "the encoding is
		// the log's on-disk format, and thus stable", "existing record kinds
		// will not be modified".
		t("format|encoding|representation", `(?:on[- ]disk|wire|file|storage|persisted|serialized|binary) (?:format|encoding|representation)\b\S*(?: \S+){0,8}? (?:stable|frozen|unchanged|never changes?|will not change|won't change)\b`, 5, kindOperational),
		t("rolling|downtime|compatib", `rolling (?:restart|upgrade)s?|zero[- ]downtime|without downtime|backwards?[- ]compatib\w*`, 3, kindOperational),
		t("own|cannot|isolated", `(?:sees?|reads?|lists?|access\w*) only (?:its|their) own|cannot (?:see|read|access|modify) (?:another|other|each)|(?:are|is) isolated from`, 6, kindBoundary),
		t("tenan", `multi[- ]tenan\w*|tenants?\b`, 2, kindBoundary),
		t("authori|access control", `authori[sz]\w*|access control`, 2, kindBoundary),
		t("neighbo|fair|starv", `noisy[- ]neighbou?rs?|fair(?:ly|ness)?\b|starv\w*`, 3, kindFairness),
		t("consistent", `consistent (?:snapshot|backup|view|copy|state|dump)s?`, 4, kindConsistency),
		t("consisten", `consisten(?:t|cy)\b`, 2, kindConsistency),
		t("never", `never (?:be |been |get |gets )?(?:applied|appl(?:y|ies)|commit(?:s|ted)?|acknowledg\w*|acked|returned|served|visible|seen|exposed|overwritten|reordered|replayed|executed)\b`, 4, kindInvariant),
		// What the protocol never does to its log, terms and votes: "a
		// leader never issues two entries with the same index", "never
		// lower the commit index".
		protoSubject("never", `never (?:\w+ )?(?:issu(?:es?|ed|ing)|decreas\w*|decrement\w*|lower(?:s|ed)?|regress\w*|go(?:es)? (?:back\w*|down)|mov(?:es?|ed) back\w*|rolls? back|diverg\w*|disagree\w*|conflict\w*|grant\w*|reus(?:es?|ed)|exceed\w*|pass(?:es)?|chang(?:es?|ed)|revert\w*|votes? twice)\b`, 5, kindInvariant),
		t("never", `never`, 2, kindInvariant),
		t("always", `always`, 1, kindInvariant),
		proto("reclaim|reuse|freed|overwritten", `(?:can ?not|cannot|not|never) (?:be )?(?:reclaimed|reused|freed|overwritten) (?:\w+ ){0,4}?(?:until|while)\b`, 5, kindInvariant),
		proto("one", `(?:at most|only|no more than) (?:be )?one (?:[\w/-]+ ){0,3}?(?:(?:is|are) (?:allowed|permitted) )?(?:at a time|at any time|at once|in flight)`, 5, kindInvariant),
		proto("once", `(?:can|may|will) only (?:be )?\w+ once|at most one \w+`, 4, kindInvariant),
		proto("majority|quorum|committed", `committed (?:\w+ ){0,2}?(?:by|to|on) (?:a|the) (?:majority|quorum)|(?:once|only after|until) (?:\w+ ){0,4}?(?:is|are|has been|have been) committed`, 5, kindInvariant),
		// An error's doc that names the operation it refuses (ninth round):
		// a write in a read-only transaction, a finished transaction used
		// again, a data directory another holder has locked, a record whose
		// checksum does not match.
		refuse(`(?:writ\w*|puts?|putting|delet\w*|modif\w*|updat\w*|chang\w*|set|setting|insert\w*) (?:\w+ ){0,4}?(?:in|on|inside|within|through|from|to|with) (?:a |an |the )?read[- ]only (?:transactions?|txns?|tx|snapshots?|views?|mode|databases?|db|stores?|handles?)\b`, 5, kindBoundary),
		refuse(`(?:closed|finished|completed|ended|discarded|aborted|committed|rolled[- ]back) (?:transactions?|txns?|tx)\b|(?:transactions?|txns?|tx) (?:that |which )?(?:(?:has|have|was|were|is|are) )?(?:already )?(?:been )?(?:closed|committed|rolled back|finished|completed|ended|aborted|discarded)\b`, 5, kindInvariant),
		refuse(`(?:director(?:y|ies)|dir|database|db) (?:\w+ ){0,3}?(?:is |are )?(?:already )?locked\b|(?:cannot|can't|can ?not|fails? to|unable to|could not|couldn't) (?:\w+ )?(?:get|acquire|obtain|take|hold) (?:the |a |an )?(?:file |exclusive |directory |dir |flock )?lock (?:\w+ ){0,2}?(?:of|on|for) (?:the |a |its |this )?(?:data |database |db )?(?:dir\b|director(?:y|ies)|databases?|db)\b`, 6, kindMutex),
		refuse(`(?:checksums?|crcs?|crc32|hash(?:es)?|digests?)(?:'s)? (?:\w+ ){0,3}?(?:(?:is|are|was|were) (?:an? )?(?:wrong|bad|invalid|incorrect|corrupt\w*|error|mismatch\w*|not (?:valid|correct))|(?:does|do|did)(?: not|n't) match|mismatch\w*)\b|(?:bad|wrong|invalid|mismatched|corrupt\w*) (?:checksums?|crcs?|crc32|hash(?:es)?|digests?)\b`, 5, kindDurability),
		// Last, so that any other kind wins a tie: a promise stated only as
		// one.
		t("guarantee", `guarantee[sd]?\b`, 2, kindGuarantee),
		t("promise", `promise[sd]?\b`, 2, kindGuarantee),
		t("ensure", `ensures? that`, 2, kindGuarantee),
	}
}()

func sig(hints, expr string, points int, name string, form bool) signal {
	return signal{strings.Split(hints, "|"), wordRE(expr), points, name, form}
}

// boosters make a sentence a promise; each counts once.
var boosters = []signal{
	sig("guarantee", `guarantee[sd]?`, 3, "guarantee", true),
	sig("promise", `promise[sd]?`, 2, "promise", true),
	sig("never", `never`, 2, "never", true),
	sig("always", `always`, 1, "always", true),
	sig("ensure", `ensures? that`, 1, "ensures that", false),
	sig("achieve|ensure|preserve|maintain|prevent|guard", `(?:to|so as to) (?:achieve|ensure|preserve|maintain|prevent|guard against)\b`, 1, "a stated purpose", true),
	sig("returns", `(?:once|after|when) (?:\w+ ){0,5}?returns`, 2, "once it returns", true),
	sig("is |are |be |remain|stay", `(?:is|are|be|remains?|stays?)\s+(?:\w+\s+)?(?:linearizable|durable|serializable|consistent|idempotent|atomic|ordered|fsynced|persisted|delivered|committed|guaranteed|lost|isolated|preserved|applied)\b|in an? (?:\w+ )?(?:durable|consistent|atomic|linearizable|serializable|crash-safe|idempotent) (?:manner|fashion|way)|(?:is|are|be) (?:\w+ )?(?:sent|delivered|applied|fired|emitted|dispatched|processed|received) (?:\S+ ){0,4}?in (?:the )?(?:\w+ )?order`, 2, "states a property", true),
	sig("will", `will (?:always |never |not )?(?:be|see|return|observe|receive|survive|deliver|apply)`, 1, "will", false),
	sig("by default", `by default`, 1, "by default", false),
	sig("reliabl", `reliabl[ey]`, 1, "reliably", true),
	sig("quorum|majority", `quorum|majority`, 1, "quorum", false),
	refusal,
	sig("paper|spec|rfc|thesis|dissertation", `(?:paper|spec(?:ification)?|rfc ?\d+|thesis|dissertation)(?:,? (?:says|states|notes))?:?\s*"|\bper (?:the )?(?:\w+'s )?(?:paper|spec(?:ification)?|rfc ?\d+|thesis|dissertation)\b`, 3, "a quoted rule", true),
	sig("0|1|2|3|4|5|6|7|8|9", `(?:under|below|less than|at most|at least|within|<=?|≤) ?\d+(?:\.\d+)? ?(?:µs|us|ms|s|sec|seconds?|minutes?|ops/s|%)`, 2, "a number bound", true),
}

// refusal is an operation refused, or an error returned, when it would
// break a property ("rejects a removal if it leads to quorum loss", "an
// error is returned if the read would exceed the staleness bound"): the
// system gives up availability to keep the promise. Its "would" and
// "violate" are the condition, not a hedge or a failure story.
var refusal = sig("reject|refus|deni|deny|returned|error|fail",
	`(?:reject\w*|refus\w*|den(?:y|ies|ied)|(?:is|are) returned|returns? an? (?:\w+ )?error|fails?)\b(?:\s+\S+){0,8}?\s+(?:if|when|unless)\s+(?:\S+\s+){0,10}?(?:would|leads? to|causes?|results? in|exceeds?)\b`,
	3, "a refusal", true)

// refusalFrameExpr opens an error's doc that says when it is returned:
// "is returned when", "returns an error if", "fails when", "is refused
// if" (the condition follows, a few words on).
const (
	refusalFrameExpr = `(?:(?:is|are|gets?|will be) returned|returns? (?:an? |the )?(?:\w+ )?error|fails?|(?:is|are) (?:refused|rejected|denied)) (?:when|if|on|upon|for|after|while|in case) (?:\S+ ){0,8}?`
	refusalHints     = "returned|error|fail|refused|rejected|denied"
)

// onByDefaultRE is a setting that is on unless turned off: what the
// system does out of the box, not a knob, so no setting penalty.
var onByDefaultRE = wordRE(`(?:enabled|on) by default|by default (?:\S+ ){0,3}?(?:is|are) (?:enabled|on)\b`)

// subjectRE are the things a system-level promise is about.
var subjectRE = wordRE(`reads?|writes?|commit\w*|acknowledg\w*|acked|clients?|messages?|events?|transactions?|requests?|leaders?|followers?|replicas?|members?|nodes?|entry|entries|snapshots?|backups?|publish\w*|consumers?|deliver\w*|streams?|data|keys?|values?|cluster|crash\w*|restart\w*|partition\w*|statements?|quer(?:y|ies)`)

// deliveredRE is what a delivery promise (at least, at most or exactly
// once) is about; without it the words describe how often a function runs.
var deliveredRE = wordRE(`deliver\w*|messages?|events?|publish\w*|requests?|writes?|retri\w*|retry\w*|transmit\w*|sent|send|receiv\w*|consum\w*|records?|changes?|operations?|updates?|notif\w*|webhook|commands?|entries|transactions?|applied|apply`)

// orderedRE is what an ordering promise orders: operations, not a list.
var orderedRE = wordRE(`messages?|events?|writes?|reads?|entries|operations?|transactions?|commits?|updates?|deliver\w*|changes?|requests?|logs?|revisions?|sequence numbers?|transmit\w*|appl(?:y|ied)|proposals?|proclamations?|streams?|streamed|notif\w*|responses?|iterat\w*|travers\w*|cursors?|range scans?`)

// atomicRE is what an atomicity promise is about: many changes at once.
// A file or directory created, renamed or replaced atomically is the
// crash-safe kind: a crash leaves the old one or the new one, never half.
var atomicRE = wordRE(`transactions?|txns?|batch(?:es)?|statements?|requests?|all[- ]or[- ]nothing|multi-?ops?|changes|operations|applied|happen|saves?|writes?|commits?|persists?|renam\w*|replac\w*|swap\w*|creat\w*|initiali[sz]\w*|files?\b|director(?:y|ies)`)

// counterRE is a number bumped or read atomically ("increases Write
// atomically", "an atomic counter"): a statistic, not a change made all
// at once.
var counterRE = wordRE(`(?:increas|increment|decrement|decreas|add|bump|load|read|get)\w* (?:\S+ ){0,3}?atomically|atomic(?:ally)? (?:increment|decrement|add|load)\w*|atomically (?:read|reads|stores?)\b|atomic (?:counters?|stats?|statistics)|counters? (?:\S+ ){0,3}?atomically`)

// dropRE marks a sentence that is no promise whatever it says: a question,
// a work item, a checklist, a pull-request or issue reference, a
// deprecation, a licence header.
var dropRE = lazyre.New(`\?\s*$|\b(?:todo|fixme|xxx|hack)\b|^deprecated\b|\[[ x]\]|\bpr ?#\d+|#\d{3,}|/pull/\d+|/issues/\d+|/commit/[0-9a-f]{7}|\bcopyright\b|licensed under|\bwarrant(?:y|ies)\b`)

// penalties are the words of hedges, plans, preconditions and
// implementation notes.
var penalties = []signal{
	sig("guarantee|not|n't|without|written|saved|need|order", `not guaranteed|no (?:\(?\w+\)? )?guarantees?|no way to guarantee|(?:impossible|not possible) to guarantee|(?:does|do|can|will)(?: not|n't) guarantee|cannot guarantee|(?:cannot|can ?not|can't|does not|doesn't|will not|won't)(?:,? [\w-]+){0,6}?,? (?:guarantee|ensure)\b|(?:is|are|be|will|was)(?: not|n't) (?:be )?(?:\w+ )?(?:linearizable|durable|serializable|guaranteed|atomic|idempotent|consistent|synced|fsynced|persisted|flushed|ordered|delivered|written to (?:the )?disk|saved)|without (?:any )?(?:[\w-]+ )?guarantees?|(?:does|do|will|is|are)(?: not|n't) (?:\w+ ){0,3}?in (?:a |the )?(?:\w+ ){0,2}?order\b|(?:you|users?|callers?|the application|applications) (?:can|could|may|will be able to|are able to) (?:\w+ )?guarantee|(?:need not|needn't|do(?:es)? not need to|is not required to) (?:be )?(?:\w+ )?(?:linearizable|durable|serializable|atomic|consistent|synced|fsynced|persisted|flushed|ordered|delivered|written to (?:the )?disk)`, -6, "a non-guarantee", false),
	sig("might|may not|perhaps|probably|hopefully|should|could|would|ideally|expected|supposed|assume|general|usual|normal|typical|often|allowed|case", `might|may not|perhaps|probably|hopefully|should|could|would|ideally|generally|usually|normally|typically|often|in the (?:common|usual|typical|general|normal) case|(?:is |are )?allowed to|(?:is |are )?(?:expected|supposed) to|assumes?\b`, -2, "a hedge", false),
	sig("we |need|would like|future|plan to", `we (?:should|need|want|must|have to|try|could|will)|needs? to|would like|in the future|plan to`, -2, "a plan", false),
	sig("custom|configur|tunable|option|setting|flag|enable|disable|set to", `customi[sz]\w*|configur(?:e|ed|es|able)\b|tunable|options?|settings?|flags?|enables?|disables?|(?:is|are|be|was) set to\b`, -3, "a setting", false),
	sig("caller|responsib|must", `caller(?:'s)? (?:must|should|responsibility)|(?:you|users?|clients?|applications?|quer(?:y|ies)) (?:\w+ )?must\b|it is the caller|callers? (?:are|is) responsible|(?:it is|is) (?:the )?(?:\w+'s )?responsibility|responsibility of`, -3, "a precondition", false),
	sig("used|test|debug|helper|useful", `(?:re)?used (?:to|for|by|in|with)|useful (?:to|for)|for (?:testing|debugging)|tests?\b|test helper`, -3, "a note on use", false),
	sig("cost|overhead|expense|space", `(?:amortiz\w*|reduc\w*|sav\w*|minimi[sz]\w*|lower\w*|cut\w*) (?:the )?(?:\w+ )?(?:cost|overhead|expense)s? of|(?:disk |memory |storage |free )?space (?:\w+ ){0,2}?(?:be |is |are |gets? )?(?:reclaimed|freed|released|recovered)\b`, -3, "a cost note", false),
	sig("returns", `returns? (?:true|false|nil|an? (?:error|empty)|err\b|zero|0\b)`, -2, "a return value", false),
	sig("violat|anomal|bug|race|happen", `violat\w*|anomal\w*|\bbugs?\b|\brace\b|(?:can|may) happen|happens when`, -2, "describes a failure", false),
	sig("goroutine|thread|mutex|channel|buffer|pointer|struct|slice|variable|field|callback|cb|helper|lock|bitmask|tree|cache|called|cas|swap|logic|code|wait|guarantee", implementationExpr, -2, "implementation words", false),
}

// lossRE states that something is lost ("will be lost upon restart");
// neverLostTerm is the index of the promise term that says it is not.
var (
	lossRE        = wordRE(`(?:will|would|can|could|may|might) be lost|(?:is|are|gets?) lost (?:on|upon|after|when|if|during|at)\b`)
	neverLostTerm = func() int {
		for i, t := range promiseTerms {
			if t.kind == kindDurability {
				return i // the first, strongest: "never lost"
			}
		}
		panic("no durability term")
	}()
)

// timeBoundRE names a time that ends before something: "the amount of
// time to reconnect before giving up", "the time without a leader before
// an election".
var timeBoundRE = wordRE(`(?:amount of time|the time|the duration|how long|the timeout|the period|the interval)\b(?:\s+\S+){0,14}?\s+before\b`)

// usedForRE is "used to" or "used for": a promise phrase right after it,
// or after one verb ("used to prevent …"), is what the thing is for;
// notUsedRE ends the words before a denial ("can not be used to …").
var (
	usedForRE = wordRE(`used (?:to|for) `)
	notUsedRE = lazyre.New(`(?:\bnot|\bnever|n't) (?:be )?$`)
	// soThatRE ends what a thing is used to do with the promise it keeps:
	// "used to block new transactions, so all earlier commits are visible".
	soThatRE = lazyre.New(`\bso(?: that)?,? $`)
)

// ruleAfterRE follows a "may not" that forbids: "may not be created
// until the prior one commits".
var ruleAfterRE = lazyre.New(`^ (?:\w+ ){0,3}?(?:until|unless|before)\b`)

// docIdiomRE is the opening of a Go doc comment that says what the
// declaration does ("Barrier is used to issue …") or when the library
// calls it ("Apply is called once …").
var docIdiomRE = lazyre.New(`^\s*[a-z_][a-z0-9_.]* (?:is|are) (?:(?:only )?used to|called (?:only )?(?:once|when|whenever|after|before|for each|in))\b`)

// dutyRE is a duty of the code that uses a library, stated with no
// caller named: a passive "must be durable / persisted / processed …", a
// "must persist / send / apply …", and "it is important that …".
var (
	dutyRE    = wordRE(`(?:must|needs? to|has to|have to) (?:not )?(?:\w+ )?be (?:\w+ )?(?:durable|persisted|written|synced|fsynced|flushed|processed|applied|sent|delivered|discarded|acknowledged)\b|must (?:not )?(?:\w+ )?(?:persist|write|flush|sync|fsync|apply|send|deliver\w*|process|discard)\b|it is (?:important|essential|crucial|vital|necessary|required) (?:that|to)\b|(?:you|users?|the application|applications) (?:\w+ )?(?:must|have to|has to|need to) (?:ensure|make sure|guarantee)\b`)
	dutyHints = []string{"must", "need", "has to", "have to", "important", "essential", "crucial", "vital", "necessary", "required"}
)

// systemActorRE names a part of the replicated system as the subject or
// the place of a duty-shaped sentence: then it states what the protocol
// does, not what the application must.
var systemActorRE = wordRE(`majority|quorum|leaders?|followers?|candidates?|nodes?|replicas?|members?|peers?|cluster|group|term|we`)

// durableDecl reports a function named after a durability step (Sync,
// Fsync, Flush, Persist, SyncAll): its opening doc sentence says what the
// call does ("Sync commits the file to stable storage", "Flush the
// memtable to disk"), not a step of another call ("SaveSnap saves … to
// disk and writes …", "WriteMeta writes … and fsyncs it").
func durableDecl(decl string) bool {
	decl = lowerASCII(decl)
	for _, stem := range []string{"sync", "fsync", "fdatasync", "datasync", "flush", "persist"} {
		if strings.HasPrefix(decl, stem) {
			return true
		}
	}
	return false
}

// imperativeDocRE follows a doc comment's opening name used as a verb
// ("Flush the memtable …"): a determiner, the verb's object.
var imperativeDocRE = lazyre.New(`^ (?:the|a|an|all|any|every|its|this|these|those)\b`)

// invariantRE names the invariants a paragraph lists.
var invariantRE = wordRE(`invariants?\b`)

// implNoteRE opens a comment paragraph addressed to the code's
// maintainers.
var implNoteRE = lazyre.New(`^\s*(?:implementation (?:notes?|warnings?|details?)|note to (?:implementers|maintainers)|internals? notes?)\s*:`)

// callCountRE is how often a function is called, no delivery: "must be
// called once (and exactly once)", "has been called at least once".
var callCountRE = wordRE(`(?:called|invoked|calls? to \S+|invocations?)(?:\s+\S+){0,3}?\s+(?:exactly|at[- ]least|at[- ]most)[- ]once\b|(?:be |been |is |are )(?:called|invoked) once\b`)

// notOperationsRE are things an order may be stated of that are no
// operations ("log files, which are totally ordered"): blanked before
// orderedRE looks for the operations an order is about.
var notOperationsRE = wordRE(`log (?:files?|segments?|file names?|names?|director(?:y|ies)|dirs?)\b`)

// sortedFieldRE opens a field comment with no subject that says how its
// slice is sorted ("Sorted in increasing order of key"): a data layout.
var sortedFieldRE = lazyre.New(`^\s*(?:sorted|ordered|kept sorted|arranged) (?:in|by)\b`)

// goInternal reports a Go file under an internal/ directory, which no
// other module may import: its exported names are no API either.
func goInternal(rel string) bool {
	return path.Ext(rel) == ".go" && (strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/"))
}

func blank(m string) string { return strings.Repeat(" ", len(m)) }

// operationsProse is the prose an order's operations are looked for in:
// without code symbols ("logNameIndex" names no log) and things that are
// no operations ("log files").
func operationsProse(prose, text string) string {
	b := []byte(notOperationsRE.ReplaceAllStringFunc(prose, blank))
	if len(text) == len(b) {
		for _, l := range identifierRE.FindAllStringIndex(text, -1) {
			for i := l[0]; i < l[1]; i++ {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// returnedValueRE follows a "returns" that names a result.
var returnedValueRE = lazyre.New(`^ (?:true|false|nil|an? |err|zero|0\b|the |its )`)

// possibilityRE ends the words before a stated property that only may
// hold: "can be applied", "may be sent".
var possibilityRE = lazyre.New(`\b(?:can|may|could|might)\s+$`)

// helperOpeningRE opens a doc comment that says what a function does step
// by step: it marks, attempts, or returns whether. On an unexported
// function that is the implementation, not a promise.
var helperOpeningRE = lazyre.New(`^[a-z_][a-z0-9_]* (?:marks|attempts|tries|returns (?:whether|if|true if)|reports (?:whether|if)|checks (?:whether|if)|verifies|validates)\b`)

// checkerOpeningRE opens the doc of a function that checks a list of
// conditions ("CheckLevels checks: …", "Verify verifies that …").
var checkerOpeningRE = lazyre.New(`^[a-z_][a-z0-9_]* (?:checks|verifies|validates)(?::| that\b| the following\b)`)

// obligationRE is an RFC 2119 MUST or MUST NOT (as written, upper case)
// and implementerRE the words of an interface's contract with its
// implementations: an obligation on the code a user writes, not a promise
// of the system.
var (
	obligationRE  = lazyre.New(`\bMUST\b|\bSHALL\b|\bREQUIRED\b`)
	implementerRE = wordRE(`implementations? (?:must|should|need to|are required)|implementers?\b|must be implemented|(?:interface|type)s? to be implemented by|implementing (?:this|the) interface must`)
)

// implementationExpr are the words of an implementation note.
const implementationExpr = `the (?:logic|code) (?:to|that|which|for|here|below|above)\b|to (?:provide|maintain|keep|uphold|honou?r) (?:this|that|these|those) guarantees?|(?:this|that) guarantee is (?:\w+ )?(?:achieved|provided|maintained|kept|implemented) by|wait ?groups?|goroutines?|threads?|mutex\w*|channel|buffer|pointer|struct|slice|variable|field|callback|cb\b|helper|lock\(\)|unlock|bitmasks?|avl|tree|cache|(?:be|is|are|being) called|called (?:concurrently|from|with)|on entry|(?:should|must) be held|lock[- ]free|compare[- ]and[- ]swap|cas\b`

// implementationRE finds them in a comment paragraph.
var implementationRE = wordRE(implementationExpr)

// codeRE is code left in a comment: a function, an assignment, a brace,
// a nil test ("if Done != nil, …").
var codeRE = lazyre.New(`\bfunc\b|:=|[{};]\s*$|\w\(\)\s*\{|\w\s*[!=]=\s*nil\b`)

// identifierRE is a code symbol in prose: camelCase or MixedCase with an
// inner capital, a dotted selector, or a snake_case name.
var identifierRE = lazyre.New(`\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+[A-Z]\w*|\b[a-zA-Z]\w*\.[a-z]\w*\(?|\b[a-zA-Z0-9]+_[a-zA-Z0-9_]+\b`)

// versionNoteRE dates a sentence to a release ("in v3.4", "since 2.10").
var versionNoteRE = lazyre.New(`\b(?:in|since|as of|from|before|after|until|prior to|with) v?\d+\.\d+`)

// narratesRE marks a body comment that narrates its code: first person
// or reasoning ("since", "therefore", "it's safe to") anywhere in its
// paragraph; skipRE a sentence that is a step ("Skip …"), as imperativeRE.
var (
	narratesRE = lazyre.New(`\b(?:we|us|our|since|because|therefore|thus|hence)\b|\bit'?s safe to\b`)
	skipRE     = lazyre.New(`^skip\b`)
)

// narrates reports a body comment's sentence that describes the code, not
// the system: a plan or a hedge in it, first person, reasoning or
// implementation words in its paragraph, or an instruction.
func narrates(s sentence, lead string, planOrHedge bool) bool {
	return planOrHedge || narratesRE.MatchString(s.para) || implementationRE.MatchString(s.para) ||
		imperativeRE.MatchString(lead) || skipRE.MatchString(lead)
}

// bodyStepRE opens a comment in a function body that names the code's
// next step ("Fsync the directories …", "Flush the log …").
var bodyStepRE = lazyre.New(`^(?:fsync|sync|flush|persist|write|close|open|create|delete|remove|rename|truncate|lock|unlock|acquire|release|update|mark|send|append)\b`)

// usageTipRE points the reader at another API ("To get keys in sorted
// order, use the iterator"): advice, not what this one promises.
var usageTipRE = lazyre.New(`^(?:to|if you (?:want|need) to) \w+ [^,]{0,80}, (?:use|call|see|try|pass|set)\b`)

// constantRE is a constant said never to change ("the value can never
// change"): a format or protocol constant, no invariant of the state.
var constantRE = lazyre.New(`(?:^|[.;:] +)(?:the|this|its|that) (?:value|constant|magic(?: \w+)?|string|size|length|name|format) (?:\w+ )?never chang`)

// firstPersonRE is a comment narrating its own code.
var firstPersonRE = lazyre.New(`\b(?:we|us|our)\b`)

// imperativeRE starts an instruction or an implementation note ("Ensure
// the dir exists", "Wait for …").
var imperativeRE = lazyre.New(`^(?:ensure|make sure|check|verify|wait|set|use|call|return|try|do|don't|note|see|read|run|keep|release|need|sort|add|remove)\b`)

// describesRE is a Go doc comment's "Name does …" opening: the sentence
// describes what a function does, a promise only if it also says so;
// definesRE is "Name is a …", "Name indicates …": it says what a thing
// is, not what the system promises.
var (
	describesRE = lazyre.New(`^[a-z_][a-z0-9_.]* (?:returns|checks|verifies|creates|sets|gets|adds|removes|sends|loads|saves|is used|will check|determines|performs|starts|stops|handles|tracks|initiates|initializes|maintains|allows|is called|is invoked|runs|reads|writes|implements|provides|delivers|processes|computes|builds|parses|stores|enables|disables|executes|calls|invokes|wraps)\b`)
	definesRE   = lazyre.New(`^[a-z_][a-z0-9_.]* (?:indicates|represents|describes|holds|contains|specifies|defines|is the|is an?|are the|has|have)\b`)
)

// idiomRE are phrases that only look like promises: "in order to",
// "lock ordering", "JSON-serializable", "durable consumer" (a name).
var idiomRE = wordRE(`in order (?:to|for|that|of)\b|lock[- ]order(?:ing|s)?|order(?:ing)? of (?:the )?locks?|out[- ]of[- ]order|(?:json|yaml|proto\w*|gob|xml)[- ]serializ\w*|serializab\w* (?:representation|form|format|type|object)|durable (?:consumer|subscription|subscriber|name|queue)s?|inconsistent|set membership|mutually exclusive|(?:amount of time|how long|time(?:out)?|duration|deadline) to wait\b|at[- ]most[- ]once (?:per|every|each|an?|in an?) \w+`)

// idiomHints are literals every idiom contains.
var idiomHints = []string{"order", "serializ", "durable", "inconsistent", "membership", "exclusive", "wait", "once"}

// maskIdioms blanks those phrases in lowered text, keeping offsets.
func maskIdioms(s string) string {
	if !hasHint(s, idiomHints) {
		return s
	}
	return idiomRE.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat(" ", len(m)) })
}

// lowerASCII lowers ASCII letters only, so every offset stays valid.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func hasHint(s string, hints []string) bool {
	for _, h := range hints {
		if strings.Contains(s, h) {
			return true
		}
	}
	return false
}

// levelFollowExpr is what follows an isolation level's name when it
// names the level: its own words (isolation, level, mode, semantics), a
// conjunction, a verb, punctuation or the end of the sentence — not a noun
// it modifies ("to read committed data", "read committed entries").
const levelFollowExpr = `\s*$|\s*[^\w\s]|\s+(?:isolation|levels?|modes?|semantics|consistency|guarantees?|and|or|nor|but|is|are|was|as)\b`

// termAt is the first match of t in the lowered prose that is a word of
// prose, not part of an identifier ("LinearizableTimeout",
// "linearizable_read"): the original text there has an underscore, a
// digit, or an upper-case letter after a lower-case one.
func termAt(t promiseTerm, prose, text string) []int {
	for _, l := range t.re.FindAllStringIndex(prose, 4) {
		if negatedAt(prose, l[0]) {
			continue // "not exactly-once", "no stale reads" deny, they do not promise
		}
		if t.follow != nil && !t.follow.MatchString(prose[l[1]:]) {
			continue // "read committed data": a verb and its object, no level
		}
		// The word the match starts in, in the original spelling.
		a, b := l[0], l[0]
		for a > 0 && isWordByte(text[a-1]) {
			a--
		}
		for b < len(text) && isWordByte(text[b]) {
			b++
		}
		if !isIdentifier(text[a:b]) {
			return l
		}
	}
	return nil
}

// negatedAt reports a "not " or "no " right before offset i.
func negatedAt(prose string, i int) bool {
	before := strings.TrimRight(prose[:i], " ")
	return strings.HasSuffix(before, " not") || strings.HasSuffix(before, " no") || before == "not" || before == "no"
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isIdentifier(w string) bool {
	if strings.ContainsAny(w, "_0123456789") {
		return true
	}
	for i := 1; i < len(w); i++ {
		if 'a' <= w[i-1] && w[i-1] <= 'z' && 'A' <= w[i] && w[i] <= 'Z' {
			return true
		}
	}
	return false
}

// scoredClaim is a candidate before ranking.
type scoredClaim struct {
	c    CandidateClaim
	tier claimTier
	toks map[string]bool
	para string // file:first line of its paragraph
	doc  bool   // from a code comment: one claim per comment paragraph
	// strong marks a sentence that guarantees or promises in so many
	// words (or refuses, or quotes a rule): a promise of another kind in
	// a paragraph already listed stands on its own.
	strong bool
}

// scoreSentence scores one sentence of file f; ok is false for a sentence
// that names no promise or is dropped.
func scoreSentence(f claimFile, s sentence) (scoredClaim, bool) {
	prose := s.prose
	// The strongest term names the kind; a second kind adds a point.
	best, loc := -1, []int(nil)
	kinds := map[string]bool{}
	// The name a Go doc comment opens with is the declaration's: in
	// "fdatasync flushes …" the phrase names the function, no promise.
	// Used as a verb before its object ("Flush the memtable to stable
	// storage", the imperative doc of Flush) it is the sentence's own word.
	termProse, opens := prose, false
	if lead := strings.TrimLeft(prose, " "); s.decl != "" && s.doc >= 1 && len(s.starts) > 0 && s.starts[0] == 0 &&
		strings.HasPrefix(lead, lowerASCII(s.decl)+" ") {
		opens = true
		if n := len(prose) - len(lead) + len(s.decl); !imperativeDocRE.MatchString(prose[n:]) {
			termProse = strings.Repeat(" ", n) + prose[n:]
		}
	}
	for i, t := range promiseTerms {
		if !hasHint(prose, t.hints) || t.protocol && f.tier != tierCore || t.subject && !subjectRE.MatchString(prose) ||
			t.opening && !opens || t.pkgDoc && s.doc != 2 {
			continue
		}
		l := termAt(t, termProse, s.text)
		if l == nil || t.opening && !durableDecl(s.decl) || t.pkgDoc && s.doc != 2 {
			continue
		}
		if t.kind != kindGuarantee {
			kinds[t.kind] = true // the generic kind is the guarantee word itself, no second promise
		}
		if best < 0 || t.points > promiseTerms[best].points {
			best, loc = i, l
		}
	}
	if best < 0 || s.deprecated || dropRE.MatchString(strings.TrimSpace(prose)) {
		return scoredClaim{}, false
	}
	if promiseTerms[best].kind == kindGuarantee && (s.doc < 0 || !subjectRE.MatchString(prose) || implementationRE.MatchString(s.para) ||
		s.internal || goInternal(f.rel)) {
		// A guarantee in no other kind's words is the system's only when it
		// names what it is about, outside a function body, and its
		// paragraph is not about the code, on a declaration of the API:
		// an unexported one's guarantee ("when the return value is false,
		// the keys are guaranteed …" on a method of an unexported type), or
		// one in a Go internal/ package, is the implementation's to itself.
		return scoredClaim{}, false
	}
	term := promiseTerms[best]
	matched := prose[loc[0]:loc[1]]
	score := term.points
	why := []string{fmt.Sprintf("%q %s +%d", matched, term.kind, term.points)}
	add := func(points int, what string) {
		score += points
		why = append(why, fmt.Sprintf("%s %+d", what, points))
	}
	if len(kinds) > 1 {
		add(1, "another promise")
	}
	kind, strength := term.kind, term.points
	switch {
	case kind == kindAtomic && counterRE.MatchString(prose):
		// "increases the counter atomically": a statistic, no atomic write.
		add(-3, "a counter updated atomically")
	case kind == kindAtomic && atomicRE.MatchString(prose):
		add(3, "atomic transactions")
		strength += 3
	case (kind == kindExactlyOnce || kind == kindAtLeastOnce || kind == kindIdempotent) && callCountRE.MatchString(prose):
		// "must be called once (and exactly once)", "once add has been
		// called at least once": how often a function runs.
		add(-6, "a call count, not delivery")
	case (kind == kindExactlyOnce || kind == kindAtLeastOnce || kind == kindIdempotent) && !deliveredRE.MatchString(prose) &&
		(kind == kindIdempotent || !deliveredRE.MatchString(s.para)):
		// What is delivered exactly or at least once may be named in the
		// paragraph's other sentences; an idempotent thing in its own.
		add(-6, "not about delivery")
	case kind == kindOrdering && (!orderedRE.MatchString(operationsProse(prose, s.text)) || sortedFieldRE.MatchString(prose)):
		add(-3, "not an order of operations")
	}
	// A non-guarantee ("no guarantee", "is not durable") names the
	// property to deny it: its promise words do not count.
	negated := hasHint(prose, penalties[0].hints) && penalties[0].re.MatchString(prose)
	// "… will be lost upon restart" states a loss: a denial too, unless
	// the sentence says it is never lost.
	lossStated := strings.Contains(prose, "lost") && lossRE.MatchString(prose) && termAt(promiseTerms[neverLostTerm], prose, s.text) == nil
	negated = negated || lossStated
	// What the application must do, in a doc comment that names no
	// caller ("must be durable before", "it is important that no message
	// be sent until …"), demands the property rather than stating it.
	// In a package doc (the library's guide to its user) such a sentence
	// is the application's; in a declaration's doc only when no actor of
	// the system is named: "messages to one target must be reliably
	// processed in order" (a Config field) is a duty, "an entry must be
	// persisted on a majority before it is committed" the protocol's.
	// In a paragraph that names the invariants it lists ("it needs to
	// maintain two invariants: batches need to be written in sequence
	// order …"), "need to" and "must" are the invariant's words: no duty,
	// no plan.
	invariant := s.code && strings.Contains(s.para, "invariant") && invariantRE.MatchString(s.para)
	duty := s.code && !invariant && (s.doc >= 2 || s.doc == 1 && !systemActorRE.MatchString(prose)) &&
		hasHint(prose, dutyHints) && dutyRE.MatchString(prose)
	// A protocol property states what the system does by itself.
	form, refused, strong, planOrHedge := term.protocol, false, false, false
	for _, b := range boosters {
		if !hasHint(prose, b.hints) || kind == kindInvariant && (b.name == "never" || b.name == "always") ||
			negated && (b.name == "guarantee" || b.name == "states a property") || duty && b.name == "states a property" {
			continue
		}
		if l := b.re.FindStringIndex(prose); l != nil {
			m := prose[l[0]:l[1]]
			if b.name == "states a property" && possibilityRE.MatchString(prose[:l[0]]) {
				continue // "an optimization can be applied": what may be, not what is
			}
			if b.name == "once it returns" && returnedValueRE.MatchString(prose[l[1]:]) {
				continue // "when f returns true": a result, not the call's end
			}
			add(b.points, fmt.Sprintf("%q %s", m, b.name))
			form = form || b.form
			refused = refused || b.name == refusal.name
			strong = strong || b.name == refusal.name || b.name == "guarantee" || b.name == "promise" || b.name == "a quoted rule"
		}
	}
	if term.refusal && !refused {
		// "ErrX is returned when a write is attempted in a read-only
		// transaction": the error's doc names the refusal.
		add(refusal.points, "an error returned for what it refuses")
		refused, strong = true, true
	}
	// "used to prevent re-delivery", "used for cluster-wide ordering": the
	// promise is what the thing is for, a stated purpose, not a note on use.
	usedFor := -1
	for _, l := range usedForRE.FindAllStringIndex(prose, -1) {
		if l[1] > loc[0] {
			continue
		}
		gap := prose[l[1]:loc[0]]
		if n := len(strings.Fields(gap)); (n <= 1 || n <= 8 && soThatRE.MatchString(gap)) && !notUsedRE.MatchString(prose[:l[0]]) {
			usedFor = l[0]
			if !strings.Contains(strings.Join(why, " "), "a stated purpose") {
				add(1, fmt.Sprintf("%q a stated purpose", strings.TrimSpace(prose[l[0]:loc[1]])))
			}
			form = true
			break
		}
	}
	// "X is the amount of time … before it is declared dead": a setting
	// that bounds a protocol step states the bound, no definition.
	timeBound := false
	if l := timeBoundRE.FindStringIndex(prose); l != nil && term.protocol && l[1] <= loc[0] {
		add(2, fmt.Sprintf("%q a named time bound", prose[l[0]:l[1]]))
		timeBound, form = true, true
	}
	if !form && strength <= 3 {
		add(-2, "no promise words")
	}
	if subj := uniqueLower(subjectRE.FindAllString(prose, -1)); len(subj) > 0 {
		add(min(len(subj), 2), "about "+strings.Join(limitSlice(subj, 2), ", "))
	}
	// "Name is used to …", "Name is called once …": the Go doc idiom for
	// what a declaration does or when the library runs it, no note on use
	// or implementation note when the sentence states a property.
	penProse, weRule := prose, false
	if l := docIdiomRE.FindStringIndex(prose); l != nil && s.doc >= 1 && s.code && (form || strength >= 4) {
		penProse = strings.Repeat(" ", l[1]) + prose[l[1]:]
		why = append(why, fmt.Sprintf("%q the doc idiom +0", strings.TrimSpace(prose[:l[1]])))
	}
	if usedFor >= 0 {
		penProse = penProse[:usedFor] + strings.Repeat(" ", loc[0]-usedFor) + penProse[loc[0]:]
	}
	if lossStated {
		add(-6, "states a loss")
	}
	if s.example {
		add(-3, "an example")
	}
	if s.code && (implNoteRE.MatchString(s.para) || s.fileNote) {
		// "IMPLEMENTATION WARNING: …", "Implementation note: …", a comment
		// on what "this file implements": how the code keeps a promise,
		// for its maintainers.
		add(-3, "an implementation note")
	}
	if obligationRE.MatchString(s.text) || implementerRE.MatchString(prose) {
		add(-6, "an obligation on an implementer")
	}
	for _, p := range penalties {
		prose := prose
		if p.name == "a note on use" || p.name == "implementation words" {
			prose = penProse
		}
		if !hasHint(prose, p.hints) ||
			refused && (p.name == "a hedge" || p.name == "describes a failure" || p.name == "a return value") ||
			p.name == "a setting" && onByDefaultRE.MatchString(prose) {
			continue
		}
		if l := p.re.FindStringIndex(prose); l != nil {
			m := prose[l[0]:l[1]]
			switch {
			case p.name == "a hedge" && m == "may not" && ruleAfterRE.MatchString(prose[l[1]:]):
				continue // "may not be created until …" forbids, it does not hedge
			case p.name == "a plan" && invariant && !strings.HasPrefix(m, "we "):
				continue // "batches need to be written in order": the invariant's words
			case p.name == "a plan" && term.protocol && strings.HasPrefix(m, "we ") && l[0] <= loc[0] && loc[0] <= l[1]+4:
				// "we will step down", "we need to step down": the protocol's
				// rule in the first person, not a plan.
				weRule = true
				continue
			}
			add(p.points, fmt.Sprintf("%q %s", m, p.name))
			planOrHedge = planOrHedge || p.name == "a plan" || p.name == "a hedge"
		}
	}
	if w := strings.Join(why, " "); duty && !strings.Contains(w, "a precondition") && !strings.Contains(w, "an obligation") {
		// The code a user writes must do it, as an implementer's MUST.
		add(-6, "a duty of the application")
	}
	// "Note that X" states X.
	lead := strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(prose), "note that"), " ,")
	if s.helper && s.doc >= 1 && len(s.starts) > 0 && s.starts[0] == 0 && helperOpeningRE.MatchString(lead) {
		add(-3, "what an unexported helper does")
	} else if s.decl != "" && s.doc >= 1 && len(s.starts) > 0 && s.starts[0] == 0 && checkerOpeningRE.MatchString(lead) {
		// "CheckLevels checks: every entry is consistent with …": what a
		// checking function looks for, not what the system promises.
		add(-3, "what a check function checks")
	}
	switch {
	case imperativeRE.MatchString(lead):
		add(-2, "an instruction")
	case strength < 6 && !timeBound && definesRE.MatchString(lead):
		add(-2, "defines a thing")
	case !form && strength < 6 && describesRE.MatchString(lead):
		add(-1, "describes a function")
	}
	if usageTipRE.MatchString(lead) {
		add(-3, "a usage tip")
	}
	if kind == kindInvariant && constantRE.MatchString(lead) {
		add(-4, "a constant that never changes")
	}
	if codeRE.MatchString(prose) {
		add(-3, "code in the comment")
	}
	if identifierRE.MatchString(blankQuoted(withoutDocName(s))) {
		add(-2, "about a code symbol")
	}
	if versionNoteRE.MatchString(prose) {
		add(-2, "a version note")
	}
	if s.doc != 0 && !weRule && firstPersonRE.MatchString(prose) {
		add(-1, "first person")
	}
	if strings.HasPrefix(lead, "because ") {
		add(-2, "reasoning")
	}
	if words := len(strings.Fields(prose)); words > 70 || words < 4 && !form {
		add(-2, "too short or too long")
	}
	if strings.Count(s.text, "](") > 2 {
		add(-2, "a list of links")
	}
	switch s.doc {
	case 2:
		add(2, "package doc")
	case 1:
		add(1, "doc comment")
	case -1:
		// A comment in a function body mostly narrates the code; in a core
		// package one that states a promise (a promise word, a stated
		// property, a refusal, a quoted rule, or a strong kind) is the
		// system's, and is read as a doc comment's would be.
		step := bodyStepRE.MatchString(lead)
		if f.tier == tierCore && form && !step && (strong && !implementationRE.MatchString(penProse) || !narrates(s, lead, planOrHedge)) {
			why = append(why, "inside a function, states a promise +0")
		} else {
			add(-3, "inside a function")
		}
		if step {
			// "Fsync the directories to ensure …": the next step of the
			// code, whatever it is there to guarantee.
			add(-3, "a step of the code")
		}
	}
	switch f.tier {
	case tierCore:
		add(4, f.where)
	case tierDocs:
		add(3, "docs")
	case tierPeripheral:
		add(-6, "tools and tests")
	}
	if s.doc == 2 && strength >= 6 {
		// A package doc names the library's promises one by one ("… a
		// persistent key/value store. It supports serializable
		// transactions."): a strong kind's sentence stands on its own.
		strong = true
	}
	c := CandidateClaim{
		Text:     oneLine(s.text),
		Category: categoryOf(kind),
		Source:   fmt.Sprintf("%s:%d", f.rel, s.lineAt(loc[0])),
		Matched:  matched,
		Kind:     kind,
		Score:    score,
		Where:    f.where,
		Why:      why,
	}
	return scoredClaim{c: c, tier: f.tier, toks: claimTokens(s.text), para: fmt.Sprintf("%s:%d", f.rel, s.lines[0].n), doc: s.code, strong: strong}, true
}

// withoutDocName is the sentence without the name a Go doc comment opens
// with ("ReplaceFile replaces …"): the convention names the declaration,
// which is no code symbol in the prose.
func withoutDocName(s sentence) string {
	if s.doc < 1 || !s.code || len(s.starts) == 0 || s.starts[0] != 0 {
		return s.text
	}
	if name, rest, ok := strings.Cut(s.text, " "); ok && !strings.ContainsAny(name, ".()") {
		return rest
	}
	return s.text
}

func uniqueLower(ws []string) []string {
	var out []string
	for _, w := range ws {
		out = appendUnique(out, strings.TrimSuffix(strings.ToLower(w), "s"))
	}
	return out
}

// categoryOf is a kind's claim category (docs/plan-format.md §4.2).
func categoryOf(kind string) string {
	switch kind {
	case kindIsolation, kindAtomic:
		return "isolation"
	case kindExactlyOnce, kindIdempotent:
		return "idempotency"
	case kindAtLeastOnce, kindDurability:
		return "durability"
	case kindOrdering:
		return "ordering"
	case kindMembership:
		return "membership"
	case kindLiveness:
		return "liveness"
	case kindPerformance:
		return "performance-SLO"
	case kindOperational:
		return "operational"
	case kindBoundary:
		return "boundary"
	case kindFairness:
		return "fairness"
	}
	return "safety" // linearizable, session, mutual exclusion, consistency
}

// rankClaims orders the candidates best first (score, then tier, then
// path and line), merges each near-duplicate, and each promise of a kind
// already listed for the same directory (package), into the better one, keeps at
// most a third of max per file (minClaimsPerFile at least) and the first max; one sentence stands
// for its paragraph; more counts the distinct candidates left out.
func rankClaims(cands []scoredClaim, limit int) ([]CandidateClaim, int) {
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.c.Score != b.c.Score {
			return a.c.Score > b.c.Score
		}
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		fa, la := splitSource(a.c.Source)
		fb, lb := splitSource(b.c.Source)
		if fa != fb {
			return lessPath(fa, fb)
		}
		return la < lb
	})
	var kept []scoredClaim
	perFile, fileCap := map[string]int{}, max(minClaimsPerFile, limit/3)
	more := 0
next:
	for _, c := range cands {
		for i := range kept {
			if kept[i].para == c.para && c.doc && (kept[i].c.Kind == c.c.Kind || !c.strong) {
				// A doc comment's best sentence stands for it, but for a
				// promise of another kind it guarantees in so many words
				// ("… is committed atomically. With Sync set, a commit will
				// guarantee the batch is on disk before returning").
				continue next
			}
			if samePromise(kept[i], c) {
				kept[i].c.Also = append(kept[i].c.Also, c.c.Source)
				continue next
			}
		}
		file, _ := splitSource(c.c.Source)
		if perFile[file] >= fileCap || len(kept) >= limit {
			more++
			continue
		}
		perFile[file]++
		kept = append(kept, c)
	}
	out := make([]CandidateClaim, len(kept))
	for i, k := range kept {
		out[i] = k.c
		out[i].ID = fmt.Sprintf("C%d", i+1)
	}
	return out, more
}

func splitSource(s string) (string, int) {
	i := strings.LastIndexByte(s, ':')
	n := 0
	fmt.Sscan(s[i+1:], &n)
	return s[:i], n
}

// claimStop are words too common to tell two sentences apart.
var claimStop = map[string]bool{
	"the": true, "and": true, "for": true, "that": true, "this": true, "with": true, "are": true, "is": true,
	"its": true, "it": true, "of": true, "to": true, "in": true, "on": true, "by": true, "be": true, "as": true,
	"an": true, "a": true, "or": true, "so": true, "if": true, "at": true, "from": true, "will": true,
}

// claimTokens is a sentence's set of content words (plural s dropped).
func claimTokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !claimStop[w] {
			out[strings.TrimSuffix(w, "s")] = true
		}
	}
	return out
}

// samePromise reports a candidate that states a listed one's promise
// again: near-duplicate words anywhere, or the same kind in the same file,
// or in the same package with the same phrase or a fifth of its words. A
// package states several promises of one kind (a vote persisted, a
// snapshot fsynced), and a library's root package is all of the library.
func samePromise(a, b scoredClaim) bool {
	if nearDuplicate(a.toks, b.toks) {
		return true
	}
	if a.c.Kind != b.c.Kind {
		return false
	}
	fa, _ := splitSource(a.para)
	fb, _ := splitSource(b.para)
	return fa == fb || packageOf(fa) == packageOf(fb) &&
		(phraseStem(a.c.Matched) == phraseStem(b.c.Matched) || overlap(a.toks, b.toks) >= samePackageOverlap)
}

// phraseStem is the first letters of a matched phrase, spelling aside:
// "linearizable" and "linearizability", "at-least-once" and "at least
// once" are one phrase.
func phraseStem(m string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(m) {
		if unicode.IsLetter(r) {
			b.WriteRune(r)
			if b.Len() == 5 {
				break
			}
		}
	}
	return b.String()
}

// samePackageOverlap is how much of their content words two promises of
// one kind in one package share to be the same promise: a package states
// several promises of one kind (a vote persisted, a snapshot fsynced), and
// a library's root package is all of it.
var samePackageOverlap = 0.2

// packageOf is the package a file belongs to: its directory, but the
// docs at the repository's root (README.md beside a library's root
// package) are the project's, not the package's.
func packageOf(file string) string {
	if d := path.Dir(file); d != "." || !docExts[strings.ToLower(path.Ext(file))] {
		return d
	}
	return "docs"
}

// overlap is the Jaccard index of two sentences' content words.
func overlap(a, b map[string]bool) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// nearDuplicate: two sentences share at least half of their content words
// (Jaccard), so they state the same promise.
func nearDuplicate(a, b map[string]bool) bool { return overlap(a, b) >= 0.5 }
