import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mongoEvalReadsOnly } from "./mongo.js";

/** Method names of the mongo shell that write, drop, reconfigure or run code. */
const ACTING = [
  "drop",
  "dropDatabase",
  "deleteMany",
  "deleteOne",
  "remove",
  "insertOne",
  "insert",
  "updateMany",
  "replaceOne",
  "findOneAndUpdate",
  "createIndex",
  "renameCollection",
  "runCommand",
  "adminCommand",
  "stepDown",
  "reconfig",
  "shutdownServer",
  "eval",
  "load",
];
const PIECES = [
  "db",
  "rs",
  ".",
  "c",
  "find",
  "count",
  "toArray",
  "printjson",
  "forEach",
  "(",
  ")",
  "{",
  "}",
  "[",
  "]",
  ":",
  ",",
  ";",
  "1",
  '"x"',
  "$match",
  "x",
  "=",
  "=>",
  "function",
  "new",
  "this",
  ...ACTING,
];

describe("the mongo shell's reading expressions", () => {
  it("never proves a text that calls an acting method, however the pieces are put together", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PIECES), { maxLength: 24 }), (pieces) => {
        const source = pieces.join("");
        const called = ACTING.some((name) => new RegExp(`\\b${name}\\s*\\(`).test(source));
        if (called) expect(mongoEvalReadsOnly(source), source).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it("never proves a chain of calls that holds an acting method anywhere", () => {
    const method = fc.constantFrom("find", "count", "sort", "limit", "toArray", "getIndexes", ...ACTING);
    const arg = fc.constantFrom("", "{}", "{a: 1}", '"x"', "[{$match: {}}]");
    const call = fc.oneof(
      fc.tuple(method, arg).map(([m, a]) => `.${m}(${a})`),
      fc.constant(".forEach(printjson)"),
    );
    const root = fc.constantFrom("db.c", "db", "rs", 'db.getSiblingDB("admin").c', "sh");
    const statement = fc
      .tuple(root, fc.array(call, { minLength: 1, maxLength: 4 }))
      .map(([r, c]) => r + c.join(""));
    fc.assert(
      fc.property(fc.array(statement, { minLength: 1, maxLength: 3 }), (statements) => {
        const source = statements.join("; ");
        const called = ACTING.some((name) => source.includes(`.${name}(`));
        if (called) expect(mongoEvalReadsOnly(source), source).toBe(false);
        else expect(mongoEvalReadsOnly(source), source).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("never proves a text that hands a function, an arrow or a free name to a call", () => {
    for (const source of [
      "db.c.find().forEach(function (d) { print(d) })",
      "db.c.find().forEach(d => print(d))",
      "db.c.find().forEach(x)",
      "db.c.find(x)",
      "db.c.find(new Date())",
    ]) {
      expect(mongoEvalReadsOnly(source), source).toBe(false);
    }
  });

  it("proves reads built from literals, db, rs and sh", () => {
    for (const source of [
      "db.orders.countDocuments({status: 'pending'})",
      "rs.status().members.length",
      "sh.status()",
      "db.c.find({a: {$in: [1, 2]}}, {_id: 0}).sort({a: -1}).limit(3).forEach(printjson)",
      "print(JSON.stringify(db.c.findOne({name: /^a/})))",
    ]) {
      expect(mongoEvalReadsOnly(source), source).toBe(true);
    }
  });
});
