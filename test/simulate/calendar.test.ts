import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type CalendarTime, calendarProblem, daysInMonth, epochSecondsOf } from "../../src/simulate/calendar.js";

const utc = (year: number, month: number, day: number, hour = 0, minute = 0, second = 0): CalendarTime => ({
  year,
  month,
  day,
  hour,
  minute,
  second,
  offsetSign: 1,
  offsetHours: 0,
  offsetMinutes: 0,
});

describe("calendar times of a trace", () => {
  it("knows the length of each month, leap years included (2000 is one, 1900 and 2100 are not)", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((month) => daysInMonth(2026, month))).toEqual([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]);
    expect([2024, 2000, 1900, 2100, 2026].map((year) => daysInMonth(year, 2))).toEqual([29, 29, 28, 28, 28]);
  });

  it.each([
    [utc(2026, 2, 30), "February 2026 has 28 days"],
    [utc(2026, 2, 29), "February 2026 has 28 days"],
    [utc(1900, 2, 29), "February 1900 has 28 days"],
    [utc(2026, 4, 31), "April 2026 has 30 days"],
    [utc(2026, 1, 0), "January 2026 has 31 days"],
    [utc(2026, 13, 1), "there is no month 13"],
    [utc(2026, 0, 1), "there is no month 0"],
    [utc(2026, 10, 10, 24, 0, 0), "the hour is 24, past 23"],
    [utc(2026, 10, 10, 23, 60, 0), "the minute is 60, past 59"],
    [utc(2026, 10, 10, 23, 59, 60), "the second is 60, past 59"],
    [{ ...utc(2026, 10, 10), offsetHours: 24 }, "the zone offset is not between -23:59 and +23:59"],
    [{ ...utc(2026, 10, 10), offsetMinutes: 60 }, "the zone offset is not between -23:59 and +23:59"],
  ])("refuses what names no instant: %j", (time, problem) => {
    expect(calendarProblem(time)).toBe(problem);
  });

  it("accepts 29 February of a leap year, and 2000", () => {
    expect(calendarProblem(utc(2024, 2, 29))).toBeUndefined();
    expect(calendarProblem(utc(2000, 2, 29))).toBeUndefined();
    expect(epochSecondsOf(utc(2024, 2, 29))).toBe(Date.UTC(2024, 1, 29) / 1000);
  });

  it("applies the zone offset east of UTC", () => {
    const at = { ...utc(2026, 10, 10, 13, 55, 36), offsetSign: -1 as const, offsetHours: 7, offsetMinutes: 0 };
    expect(epochSecondsOf(at)).toBe(Date.UTC(2026, 9, 10, 20, 55, 36) / 1000);
    expect(epochSecondsOf({ ...at, offsetSign: 1, offsetHours: 5, offsetMinutes: 30 })).toBe(Date.UTC(2026, 9, 10, 8, 25, 36) / 1000);
  });

  it("counts years below 100 as they are written, which Date.UTC does not", () => {
    expect(epochSecondsOf(utc(50, 1, 1))).toBe(Date.parse("0050-01-01T00:00:00Z") / 1000);
  });

  it("agrees with Date on every valid date from year 0 to 9999, and round-trips its fields", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("0000-01-01T00:00:00Z"), max: new Date("9999-12-31T23:59:59Z"), noInvalidDate: true }), (date) => {
        const time = utc(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate(), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds());
        expect(calendarProblem(time)).toBeUndefined();
        expect(epochSecondsOf(time)).toBe(Math.floor(date.getTime() / 1000));
      }),
    );
  });
});
